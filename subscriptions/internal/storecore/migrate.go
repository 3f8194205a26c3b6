package storecore

import (
	"fmt"
	"io/fs"
	"path"
)

// Migrate calls apply, in order, with each of the migrations/*.sql of fsys
// that a schema at version has not seen, numbered from 1.
func Migrate(fsys fs.FS, version int, apply func(n int, name, body string) error) error {
	names, err := fs.Glob(fsys, "migrations/*.sql") // in order: fs.Glob reads directories sorted
	if err != nil {
		return err
	}
	if version > len(names) {
		return fmt.Errorf("schema version %d is newer than this binary knows (%d); use a newer mcpe-server", version, len(names))
	}
	for i := version; i < len(names); i++ {
		body, err := fs.ReadFile(fsys, names[i])
		if err == nil {
			err = apply(i+1, path.Base(names[i]), string(body))
		}
		if err != nil {
			return fmt.Errorf("apply migration %s: %w", names[i], err)
		}
	}
	return nil
}
