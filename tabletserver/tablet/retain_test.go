package tablet

import (
	"fmt"
	"runtime"
	"testing"
	"weak"
)

// A compaction's or drop-range's new file list keeps no dropped file in
// its spare capacity: the version would keep the dropped files' indexes
// and filters reachable for as long as it is current (13 MB at 4M keys).
func TestNewFileListsKeepNoDroppedFiles(t *testing.T) {
	tb := openTablet(t, testOptions(t.TempDir()))
	for i := range 4 {
		apply(t, tb, fmt.Sprint("r", i), set("a", "q", 1, "v"))
		apply(t, tb, "z", set("a", "q", int64(i+1), "z")) // four runs
		if err := tb.Flush(bg); err != nil {
			t.Fatal(err)
		}
	}
	check := func(what string) {
		t.Helper()
		v, err := tb.currentVersion()
		if err != nil {
			t.Fatal(err)
		}
		defer v.unref()
		fs := v.files["a"]
		for i, f := range fs[len(fs):cap(fs)] {
			if f != nil {
				t.Fatalf("after %s: the file list of %d keeps a file at %d past its length", what, len(fs), len(fs)+i)
			}
		}
	}
	if err := tb.Compact(bg, false); err != nil {
		t.Fatal(err)
	}
	check("a merging compaction")
	for i := range 3 {
		apply(t, tb, fmt.Sprint("s", i), set("a", "q", 1, "v"))
		if err := tb.Flush(bg); err != nil {
			t.Fatal(err)
		}
	}
	if err := tb.DropRange(bg, []byte("r"), []byte("s1")); err != nil {
		t.Fatal(err)
	}
	check("a drop-range")
}

// A flushed memtable is not kept reachable by the list of memtables
// waiting for their flush (its arena is the memtable budget's size).
func TestFlushedMemtableIsNotKept(t *testing.T) {
	tb := openTablet(t, testOptions(t.TempDir()))
	apply(t, tb, "r", set("a", "q", 1, "v"))
	tb.mu.Lock()
	w := weak.Make(tb.mem)
	tb.mu.Unlock()
	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.GC()
	if w.Value() != nil {
		t.Fatal("the flushed memtable is still reachable")
	}
	readRow(t, tb, "r", nil) // the tablet itself stays reachable until here
}
