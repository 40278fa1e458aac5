package tabletserver

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/sharedlog"
	"github.com/tabuladb/tabula/storepath"
	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/wal"
)

// A tablet this server closed unflushed (failed, fenced, or of a deleted
// table) pins the shared log until its records are no longer needed: its
// pin is released when a newer owner's manifest superseded it or its
// folder is gone, and kept while its own manifest is the newest.
func TestOrphanPinsAreReleasedOnlyWhenSuperseded(t *testing.T) {
	e := newEnv(t)
	srv := e.start(func(o *Options) { o.DisableBackgroundWork = true })
	dir := srv.tabletDir("users", "t1")
	for _, tc := range []struct {
		name      string
		arrange   func(t *testing.T)
		releasing bool
	}{
		{"its own manifest is the newest", func(t *testing.T) { saveAt(t, dir, 1) }, false},
		{"a newer owner sealed", func(t *testing.T) { saveAt(t, dir, 1); saveAt(t, dir, 2) }, true},
		{"its folder is gone", func(t *testing.T) {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("orphan-%d", len(tc.name))
			l, err := sharedlog.Open(sharedlog.Options{Root: e.root, Name: name, SegmentSize: 1 << 10, SyncMode: wal.SyncNone})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			h := l.Attach("users/t1", 1)
			for i := 0; i < 100; i++ {
				if _, err := h.Write(make([]byte, 100)); err != nil {
					t.Fatal(err)
				}
			}
			if err := h.Detach(false); err != nil {
				t.Fatal(err)
			}
			other := l.Attach("users/t2", 1)
			seg, _ := other.Rotate()
			if err := other.RemoveBefore(seg); err != nil { // t2 flushed everything
				t.Fatal(err)
			}
			tc.arrange(t)
			if err := srv.releaseOrphan(l, "users", "t1"); err != nil {
				t.Fatal(err)
			}
			segs, err := wal.ListSegments(nil, sharedlog.Dir(e.root, name))
			if err != nil {
				t.Fatal(err)
			}
			if released := segs[0] != 1; released != tc.releasing {
				t.Fatalf("segments left %v: released = %v, want %v", segs, released, tc.releasing)
			}
		})
	}
}

func saveAt(t *testing.T, dir string, epoch int64) {
	t.Helper()
	if err := manifest.SaveEpoch(nil, dir, epoch, manifest.State{NextFileNum: 1, ReplayPoint: 1, Log: "orphan"}); err != nil {
		t.Fatal(err)
	}
}

// A shared log that cannot be started (the store refuses writes) leaves no
// trail: every failed attempt removes what it created and the next one
// tries the same name, so a long outage does not leave hundreds of empty
// logs that the GC may not delete while the server's lease lives.
func TestFailedLogStartsLeaveNoTrail(t *testing.T) {
	e := newEnv(t)
	disk := vfs.NewFaulty(nil)
	srv := e.start(func(o *Options) { o.FS = disk; o.DisableBackgroundWork = true })
	lease := srv.leaseID.Load()
	logs := storepath.Logs(e.root)
	disk.Set(func(op vfs.Op, name string) error {
		if op == vfs.OpCreate && strings.HasPrefix(name, logs) {
			return vfs.Failf("create %s", name)
		}
		return nil
	})
	for range 5 {
		if err := srv.openLog(lease); err == nil {
			t.Fatal("a log started on a disk that refuses to create files")
		}
	}
	disk.Set(nil)
	if err := srv.openLog(lease); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(logs)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, en := range ents {
		names = append(names, en.Name())
	}
	if want := []string{meta.LogName(lease, 1), meta.LogName(lease, 2)}; !slices.Equal(names, want) {
		t.Fatalf("logs after 5 failed starts and one that worked: %v, want %v", names, want)
	}
}
