package main

import (
	"os"
	"testing"
	"time"
)

// TestMain runs the test binary as one of the floor's servers when the
// floor starts it as one.
func TestMain(m *testing.M) {
	if serveRole(os.Args[1:]) {
		return
	}
	os.Exit(m.Run())
}

// TestTurns runs the turns floor small in each way the lock takes commits:
// every event is answered once a commit carrying it is done, and each
// commit carries one at least.
func TestTurns(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range commitModes {
		res, err := turns(self, mode, 100*time.Microsecond, 2, 4, 200)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if res.Events != 200 || res.PerCommit < 1 || res.Servers != 2 || res.Commits != mode {
			t.Errorf("%s: %+v", mode, res)
		}
	}
}
