package tablet

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/wal"
)

// TestCommitLogTruncatedAtEveryBoundary cuts the tablet's commit log at
// every record boundary and inside every record (a crash mid-append), and
// reopens the tablet: it must hold exactly the batches wholly in the log,
// each one all or nothing, and take new writes afterwards. (The wal
// package tests torn tails of the log alone; this checks that the tablet's
// replay turns them into whole batches.)
func TestCommitLogTruncatedAtEveryBoundary(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	fams := []families.Family{{Name: "a"}, {Name: "b", MaxVersions: 2}}
	const now = modelT0
	opts := func(dir string) Options {
		return Options{Dir: dir, Create: true, Families: fams, SyncMode: wal.SyncAlways, DisableBackgroundWork: true,
			Clock: func() int64 { return now }}
	}
	src := filepath.Join(t.TempDir(), "src")
	tb, err := Open(opts(src))
	if err != nil {
		t.Fatal(err)
	}
	// Batches of several mutations across both families, with deletes, so
	// a half-replayed batch would show.
	type batchRec struct {
		row  string
		muts []cell.Mutation
	}
	var batches []batchRec
	for i := 0; i < 12; i++ {
		row := fmt.Sprintf("r%d", rng.Intn(4))
		var muts []cell.Mutation
		for j := 0; j < 1+rng.Intn(4); j++ {
			fam := fams[rng.Intn(2)].Name
			q := []byte(fmt.Sprintf("q%d", rng.Intn(3)))
			switch rng.Intn(8) {
			case 0:
				muts = append(muts, cell.Mutation{Kind: cell.DeleteColumn, Family: fam, Qualifier: q})
			case 1:
				muts = append(muts, cell.Mutation{Kind: cell.DeleteRow})
			default:
				muts = append(muts, cell.Mutation{Kind: cell.SetCell, Family: fam, Qualifier: q,
					Timestamp: int64(1 + rng.Intn(5)), Value: []byte(fmt.Sprintf("b%d-%d", i, j))})
			}
		}
		batches = append(batches, batchRec{row, muts})
		if err := tb.Apply(bg, []byte(row), muts); err != nil {
			t.Fatalf("Apply: %v", err)
		}
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}

	seg := lastSegment(t, filepath.Join(src, logDirName))
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	// Walk the frames (a segment header of 8 bytes, 28 in wal format
	// version 2, 36 since version 3; records of crc(4) len(4) payload)
	// to find the record boundaries.
	const frameHeader = 8
	segHeader := map[byte]int{1: 8, 2: 28, 3: 36}[data[7]]
	bounds := []int{segHeader}
	for off := segHeader; off < len(data); {
		if off+frameHeader > len(data) {
			t.Fatalf("segment %s ends inside a frame header at %d", seg, off)
		}
		off += frameHeader + int(binary.LittleEndian.Uint32(data[off+4:]))
		bounds = append(bounds, off)
	}
	if len(bounds)-1 != len(batches) {
		t.Fatalf("segment holds %d records, want one per batch (%d)", len(bounds)-1, len(batches))
	}

	want := func(k int) string {
		m := newRefModel(fams)
		for _, b := range batches[:k] {
			m.apply(b.row, b.muts, now)
		}
		var parts []string
		for _, row := range m.rowKeys(nil, nil) {
			if cs := m.read(row, now); len(cs) > 0 {
				parts = append(parts, fmt.Sprintf("%s{%s}", row, render(cs)))
			}
		}
		return strings.Join(parts, " ")
	}
	type cut struct{ at, batches int }
	cuts := []cut{{0, 0}, {4, 0}}
	for k := 0; k < len(batches); k++ {
		b, next := bounds[k], bounds[k+1]
		cuts = append(cuts, cut{b, k}, cut{b + 1, k}, cut{b + 4, k}, cut{b + frameHeader, k},
			cut{(b + frameHeader + next) / 2, k}, cut{next - 1, k})
	}
	cuts = append(cuts, cut{len(data), len(batches)})
	for i, c := range cuts {
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("cut%d", i))
		copyDir(t, src, dir)
		if err := os.Truncate(filepath.Join(dir, logDirName, filepath.Base(seg)), int64(c.at)); err != nil {
			t.Fatal(err)
		}
		tb, err := Open(opts(dir))
		if err != nil {
			t.Fatalf("cut at byte %d: Open: %v", c.at, err)
		}
		if got, w := scan(t, tb, ReadOptions{}), want(c.batches); got != w {
			_ = tb.Close()
			t.Fatalf("cut at byte %d (after %d whole records): the tablet holds\n  %s\nwant\n  %s", c.at, c.batches, got, w)
		}
		// The tablet takes writes after the torn tail, and they survive
		// another reopen.
		apply(t, tb, "z", set("a", "q", 1, "after"))
		if err := tb.Close(); err != nil {
			t.Fatal(err)
		}
		tb = openTablet(t, opts(dir))
		if got := readRow(t, tb, "z", nil); got != "a:q@1=after" {
			t.Fatalf("cut at byte %d: write after reopen reads %q", c.at, got)
		}
		if got, w := scan(t, tb, ReadOptions{Ranges: []RowRange{{End: []byte("z")}}}), want(c.batches); got != w {
			t.Fatalf("cut at byte %d: after a second reopen the tablet holds\n  %s\nwant\n  %s", c.at, got, w)
		}
		if err := tb.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// lastSegment returns the non-empty commit log segment of dir; it fails if
// there are several.
func lastSegment(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var segs []string
	for _, e := range ents {
		if info, err := e.Info(); err == nil && strings.HasSuffix(e.Name(), ".log") && info.Size() > 8 {
			segs = append(segs, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(segs)
	if len(segs) != 1 {
		t.Fatalf("want one non-empty log segment in %s, found %v", dir, segs)
	}
	return segs[0]
}

// copyDir copies the regular files of the tree src to dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
