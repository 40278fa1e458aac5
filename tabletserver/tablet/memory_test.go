package tablet

import (
	"fmt"
	"testing"

	"github.com/tabuladb/tabula/cell"
)

// TestFileMetadataBytesFollowsTheFiles checks that the tablet reports the
// index and filter memory of exactly the files of its current version:
// nothing before a flush, the sum of the readers' after each flush and
// after compaction merges them, nothing once closed.
func TestFileMetadataBytesFollowsTheFiles(t *testing.T) {
	tb := openTablet(t, testOptions(t.TempDir()))
	if n := tb.FileMetadataBytes(); n != 0 {
		t.Fatalf("empty tablet reports %d bytes", n)
	}
	sum := func() int64 {
		v, err := tb.currentVersion()
		if err != nil {
			t.Fatal(err)
		}
		defer v.unref()
		var n int64
		for _, fs := range v.files {
			for _, f := range fs {
				n += f.metadataBytes()
			}
		}
		return n
	}
	val := make([]byte, 100)
	prev := int64(0)
	for flush := 0; flush < 3; flush++ {
		for i := 0; i < 2000; i++ {
			row := []byte(fmt.Sprintf("row%06d-%d", i, flush))
			if err := tb.Apply(bg, row, []cell.Mutation{set("b", "q", 1, string(val)), set("a", "q", 1, "x")}); err != nil {
				t.Fatal(err)
			}
		}
		if err := tb.Flush(bg); err != nil {
			t.Fatal(err)
		}
		n := tb.FileMetadataBytes()
		if n <= prev || n != sum() {
			t.Fatalf("after flush %d: %d bytes reported, %d before, readers hold %d", flush, n, prev, sum())
		}
		prev = n
	}
	if err := tb.Compact(bg, true); err != nil {
		t.Fatal(err)
	}
	// A compaction's outputs hold nothing until their first read.
	if n := tb.FileMetadataBytes(); n != 0 || n != sum() {
		t.Fatalf("after a major compaction: %d bytes reported, readers hold %d, want 0 until a read", n, sum())
	}
	if _, err := tb.ReadRow(bg, []byte("row000001-1"), nil); err != nil {
		t.Fatal(err)
	}
	if n := tb.FileMetadataBytes(); n <= 0 || n >= prev || n != sum() {
		t.Fatalf("after a major compaction and a read: %d bytes reported, %d before, readers hold %d", n, prev, sum())
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if n := tb.FileMetadataBytes(); n != 0 {
		t.Fatalf("closed tablet reports %d bytes", n)
	}
}
