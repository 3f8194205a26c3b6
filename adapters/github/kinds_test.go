package github

import (
	"reflect"
	"testing"
)

// TestKindsNeedObjects: each name a kind needs is the JSON name of an obj
// field of payload, which has finds by reflection: a misspelt name would
// refuse every delivery of the kind, and one naming another field would
// panic while serving it.
func TestKindsNeedObjects(t *testing.T) {
	typ := reflect.TypeFor[payload]()
	for event, k := range kinds {
		for _, need := range k.needs {
			ok := false
			for i := range typ.NumField() {
				if f := typ.Field(i); f.Tag.Get("json") == need {
					ok = f.Type.Kind() == reflect.Struct && reflect.Zero(f.Type).FieldByName("ok").Kind() == reflect.Bool
				}
			}
			if !ok {
				t.Errorf("%s needs %q, which is not an obj field of payload", event, need)
			}
		}
	}
}
