package tablet

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/sharedlog"
	"github.com/tabuladb/tabula/wal"
)

// An older owner of a tablet (a tablet server paused past its lease) may
// wake while a newer owner serves the same folder, and finish a write, a
// flush, a compaction. With owner epochs the two never collide on a file,
// nothing the old owner does after the new one opened becomes visible, and
// the old owner cannot delete what the new one relies on.
func TestNewerOwnerNeverCollidesWithOrTrustsAnOlderOne(t *testing.T) {
	dir := t.TempDir()
	at := func(epoch int64) Options {
		o := testOptions(dir)
		o.Epoch = epoch
		return o
	}
	old := openTablet(t, at(1))
	for _, row := range []string{"flushed", "flushed2"} {
		apply(t, old, row, set("a", "q", 1, "v1"))
		if err := old.Flush(bg); err != nil {
			t.Fatal(err)
		}
	}
	apply(t, old, "logged", set("a", "q", 1, "v1")) // acknowledged, only in the log

	// The new owner takes over while the old one still runs.
	cur := openTablet(t, at(2))
	if got := scan(t, cur, ReadOptions{}); got != "flushed{a:q@1=v1} flushed2{a:q@1=v1} logged{a:q@1=v1}" {
		t.Fatalf("new owner reads %q; want both acknowledged rows", got)
	}
	apply(t, cur, "new", set("a", "q", 1, "v2"))

	// The old owner wakes: a write, a flush and a major compaction. It
	// may fail, but must not collide with the new owner's files...
	_ = old.Apply(bg, []byte("zombie"), []cell.Mutation{set("a", "q", 1, "z")})
	_ = old.Compact(bg, true)
	_ = old.Flush(bg)
	// ...nor break the new owner's own flushes and compactions.
	apply(t, cur, "new2", set("b", "q", 1, "v2"))
	if err := cur.Flush(bg); err != nil {
		t.Fatalf("new owner's flush after the old owner's: %v", err)
	}
	if err := cur.Compact(bg, true); err != nil {
		t.Fatalf("new owner's compaction after the old owner's: %v", err)
	}
	if err := old.Close(); err != nil && !errors.Is(err, ErrClosed) {
		t.Logf("closing the old owner: %v", err)
	}
	apply(t, cur, "new3", set("a", "q", 1, "v3"))
	if err := cur.Close(); err != nil {
		t.Fatal(err)
	}

	// The next owner sees exactly what the owners of epochs 1 and 2
	// acknowledged before they were replaced: never the zombie's row.
	next := openTablet(t, at(3))
	want := "flushed{a:q@1=v1} flushed2{a:q@1=v1} logged{a:q@1=v1} new{a:q@1=v2} new2{b:q@1=v2} new3{a:q@1=v3}"
	if got := scan(t, next, ReadOptions{}); got != want {
		t.Fatalf("after the takeover the tablet reads\n%s\nwant\n%s", got, want)
	}

	// An owner older than the newest manifest is refused.
	if _, err := Open(at(2)); !errors.Is(err, ErrNewerOwner) {
		t.Fatalf("opening at epoch 2 below a manifest of epoch 3: %v, want ErrNewerOwner", err)
	}
}

// Family folders never take a manifest's name, whatever the epoch.
func TestFamilyFoldersNeverShadowManifests(t *testing.T) {
	for _, name := range []string{"MANIFEST", "MANIFEST.tmp", "MANIFEST-7", "MANIFEST-7.tmp", "MANIFEST-7-v3", "MANIFEST-0-v1.tmp", "log", ".", ".."} {
		if got := familyFolder(name); got != "~"+name {
			t.Errorf("familyFolder(%q) = %q, want %q", name, got, "~"+name)
		}
	}
	if got := familyFolder("cf"); got != "cf" {
		t.Errorf("familyFolder(cf) = %q", got)
	}
}

// Open creates a tablet only when asked; a folder without a manifest is
// otherwise lost data, never a new empty tablet.
func TestOpenCreatesOnlyWhenAsked(t *testing.T) {
	dir := t.TempDir() + "/t1"
	o := testOptions(dir)
	o.Create = false
	if _, err := Open(o); !errors.Is(err, ErrNoTablet) {
		t.Fatalf("Open of a folder without a manifest: %v, want ErrNoTablet", err)
	}
	tb := openTablet(t, testOptions(dir))
	apply(t, tb, "r", set("a", "q", 1, "v"))
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if got := scan(t, openTablet(t, o), ReadOptions{}); got != "r{a:q@1=v}" {
		t.Fatalf("reopened without Create: %q", got)
	}
}

// On shared commit logs, an older owner that keeps writing after a newer
// owner sealed the tablet never makes a cell visible to the newer owner or
// to any later one: its records are tagged with its epoch, and every owner
// replays only the records of the epoch whose manifest it opened. Both
// when the newer owner is another server (another log) and when it is the
// same server again (the same log, as after a tablet failure).
func TestZombieOnASharedLogIsNeverReplayed(t *testing.T) {
	for _, c := range []struct {
		sameLog bool   // the new owner writes the zombie's log
		next    string // the log of the owner after them
	}{{false, "a"}, {false, "c"}, {true, "a"}, {true, "c"}} {
		sameLog := c.sameLog
		t.Run(fmt.Sprintf("same log=%v next on log %s", sameLog, c.next), func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "tables", "users", "t1")
			logs := map[string]*sharedlog.Log{}
			logOf := func(name string) *sharedlog.Log {
				if l := logs[name]; l != nil {
					return l
				}
				l, err := sharedlog.Open(sharedlog.Options{Root: root, Name: name, SyncMode: wal.SyncNone})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
				logs[name] = l
				return l
			}
			at := func(epoch int64, log string) Options {
				o := testOptions(dir)
				o.Epoch, o.Log, o.Name = epoch, logOf(log), "users/t1"
				return o
			}
			old := openTablet(t, at(1, "a"))
			apply(t, old, "flushed", set("a", "q", 1, "v1"))
			if err := old.Flush(bg); err != nil {
				t.Fatal(err)
			}
			apply(t, old, "logged", set("a", "q", 1, "v1")) // acknowledged, only in log a

			second := "b"
			if sameLog {
				second = "a"
			}
			cur := openTablet(t, at(2, second))
			if got := scan(t, cur, ReadOptions{}); got != "flushed{a:q@1=v1} logged{a:q@1=v1}" {
				t.Fatalf("new owner reads %q; want both acknowledged rows", got)
			}
			apply(t, cur, "new", set("a", "q", 1, "v2"))

			// The old owner wakes and writes: to its log, at its epoch.
			if err := old.Apply(bg, []byte("zombie"), []cell.Mutation{set("a", "q", 1, "z")}); err != nil {
				t.Fatalf("the old owner's late write failed before reaching the log: %v", err)
			}
			_ = old.Close()
			apply(t, cur, "new2", set("b", "q", 1, "v2"))
			// The new owner stops without flushing (a crash): its rows
			// are only in its log.
			if err := cur.Close(); err != nil {
				t.Fatal(err)
			}

			n := openTablet(t, at(3, c.next))
			want := "flushed{a:q@1=v1} logged{a:q@1=v1} new{a:q@1=v2} new2{b:q@1=v2}"
			if got := scan(t, n, ReadOptions{}); got != want {
				t.Fatalf("the next owner reads\n%s\nwant\n%s", got, want)
			}
		})
	}
}
