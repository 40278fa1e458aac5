package tablet

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/vfs"
)

// TestStatsReportWritersInFlight: while a flush writes its SSTable, the
// tablet's memory stats count what its writer holds (its 256 KiB output
// buffer, blocks and bloom builder), and nothing once the flush is done.
func TestStatsReportWritersInFlight(t *testing.T) {
	fsys := vfs.NewFaulty(vfs.Default)
	opts := testOptions(t.TempDir())
	opts.FS = fsys
	opts.Families = []families.Family{{Name: "b", Bloom: families.BloomRow}}
	tb := openTablet(t, opts)
	const rows = 20000
	for i := range rows {
		if err := tb.Apply(bg, fmt.Appendf(nil, "row%06d", i), []cell.Mutation{set("b", "q", 1, "v")}); err != nil {
			t.Fatal(err)
		}
	}
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	fsys.Set(func(op vfs.Op, name string) error {
		if op == vfs.OpWrite && strings.HasSuffix(name, ".sst") {
			once.Do(func() {
				close(held)
				<-release
			})
		}
		return nil
	})
	done := make(chan error, 1)
	go func() { done <- tb.Flush(bg) }()
	<-held
	during := tb.Stats().Memory
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	fsys.Set(nil)
	if during.Writing < 256<<10 {
		t.Fatalf("during the flush of %d rows the stats count %d bytes of writers", rows, during.Writing)
	}
	if during.Owned() != during.MemtableArena+during.FileMetadata+during.Writing {
		t.Fatalf("Owned %d leaves out the writers", during.Owned())
	}
	if after := tb.Stats().Memory.Writing; after != 0 {
		t.Fatalf("after the flush the stats count %d bytes of writers", after)
	}
}
