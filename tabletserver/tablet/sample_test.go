package tablet

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/vfs"
)

// sampleFixture writes n rows into a tablet of two families in 1 KiB
// blocks, flushed into four files per family each holding a quarter of the
// rows. Family a's values are large in the first half of the rows and small
// in the second, family b's the other way round, so that a sample that
// leaves out a family or a file puts its offsets far from where the bytes
// are. It returns the bytes of cells written per row (values, qualifiers
// and rows: the keys' shares), for the expected offsets.
func sampleFixture(t *testing.T, dir string, n int) (*Tablet, []uint64) {
	t.Helper()
	seed := uint64(20261206)
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	opts := testOptions(dir)
	opts.Families = []families.Family{
		{Name: "a", BlockSize: families.MinBlockSize},
		{Name: "b", BlockSize: families.MinBlockSize, Compression: families.CompressionSnappy},
	}
	tb := openTablet(t, opts)
	per := make([]uint64, n)
	value := func(size int) string {
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return string(b)
	}
	for i := 0; i < n; i++ {
		big, small := 500, 50
		if i >= n/2 {
			big, small = small, big
		}
		row := fmt.Sprintf("row%05d", i)
		apply(t, tb, row, set("a", "q", 1, value(big)), set("b", "q", 1, value(small)))
		per[i] = uint64(big + small + 2*(len(row)+1+8))
		if (i+1)%(n/4) == 0 {
			if err := tb.Flush(bg); err != nil {
				t.Fatal(err)
			}
		}
	}
	return tb, per
}

// checkSamples checks what SampleKeys promises of samples taken every
// `every` bytes of tablet tb holding rows first..first+len(per)-1 of the
// fixture: sorted whole rows strictly inside the range, at least every
// apart and at most every plus a few blocks, offsets where the bytes are,
// and a total that counts every file of every family.
func checkSamples(t *testing.T, tb *Tablet, every uint64, first int, per []uint64) {
	t.Helper()
	samples, total, err := tb.SampleKeys(every)
	if err != nil {
		t.Fatal(err)
	}
	if ref, refTotal, err := sampleKeysByEntries(tb, every); err != nil || refTotal != total || !reflect.DeepEqual(ref, samples) {
		t.Fatalf("SampleKeys = %d samples, total %d; the reference (index entries copied) %d, %d, %v", len(samples), total, len(ref), refTotal, err)
	}
	// The total is the data blocks of every file, within the range.
	var want uint64
	v, err := tb.currentVersion()
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for _, name := range []string{"a", "b"} {
		for _, f := range v.files[name] {
			rd, err := f.reader()
			if err != nil {
				t.Fatal(err)
			}
			want += rd.ApproximateSize(f.lower(), f.upper())
			files++
		}
	}
	v.unref()
	if files < 4 {
		t.Fatalf("fixture has %d files, want several per family", files)
	}
	if total != want {
		t.Fatalf("total %d, want %d (every file of every family)", total, want)
	}
	const slack = 4 << 10 // a few 1 KiB blocks, with their keys' overhead
	var raw uint64
	for _, b := range per {
		raw += b
	}
	if n := uint64(len(samples)); n+1 < total/(every+slack) || n > total/every {
		t.Fatalf("%d samples of %d bytes every %d", n, total, every)
	}
	start, end := tb.Range()
	var prev Sample
	for i, s := range samples {
		var idx int
		if _, err := fmt.Sscanf(string(s.Row), "row%05d", &idx); err != nil || fmt.Sprintf("row%05d", idx) != string(s.Row) {
			t.Fatalf("sample %d: %q is not a row key", i, s.Row)
		}
		if (start != nil && bytes.Compare(s.Row, start) <= 0) || (end != nil && bytes.Compare(s.Row, end) >= 0) {
			t.Fatalf("sample %q outside (%q, %q)", s.Row, start, end)
		}
		if i > 0 && bytes.Compare(s.Row, prev.Row) <= 0 {
			t.Fatalf("samples out of order: %q after %q", s.Row, prev.Row)
		}
		gap := s.Offset - prev.Offset
		if s.Offset < prev.Offset || gap < every || gap > every+slack {
			t.Fatalf("sample %d %q at %d, previous at %d: want %d to %d apart", i, s.Row, s.Offset, prev.Offset, every, every+slack)
		}
		// Where the bytes are: the share of the cells before the row.
		var before uint64
		for _, b := range per[:idx-first] {
			before += b
		}
		got, exp := float64(s.Offset)/float64(total), float64(before)/float64(raw)
		if got < exp-0.03 || got > exp+0.03 {
			t.Fatalf("sample %q: %.3f of the bytes before it, want %.3f (the cells' share)", s.Row, got, exp)
		}
		prev = s
	}
	if prev.Offset > total {
		t.Fatalf("last sample at %d past the total %d", prev.Offset, total)
	}
}

func TestSampleKeysAcrossFilesAndFamilies(t *testing.T) {
	const n = 4000
	tb, per := sampleFixture(t, t.TempDir(), n)
	for _, every := range []uint64{16 << 10, 64 << 10, 256 << 10} {
		t.Run(fmt.Sprint(every), func(t *testing.T) { checkSamples(t, tb, every, 0, per) })
	}
	// Larger than the tablet: no sample.
	if s, total, err := tb.SampleKeys(1 << 40); err != nil || len(s) != 0 || total == 0 {
		t.Fatalf("SampleKeys(1 TiB) = %d samples, total %d, %v", len(s), total, err)
	}
	if _, _, err := tb.SampleKeys(0); !errors.Is(err, cell.ErrInvalid) {
		t.Fatalf("SampleKeys(0): %v", err)
	}
}

func TestSampleKeysOfSplitChildrenStayInRange(t *testing.T) {
	const n = 4000
	root := t.TempDir()
	tb, per := sampleFixture(t, filepath.Join(root, "parent"), n)
	left, right := filepath.Join(root, "left"), filepath.Join(root, "right")
	if err := tb.Split(bg, []byte("row01500"), left, right); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir   string
		first int
		per   []uint64
	}{{left, 0, per[:1500]}, {right, 1500, per[1500:]}} {
		opts := testOptions(c.dir)
		child := openTablet(t, opts)
		// The children read the parent's files through bounded
		// references: a block straddling the bound counts on both sides.
		checkSamples(t, child, 16<<10, c.first, c.per)
	}
}

func TestSampleKeysOfAnEmptyTablet(t *testing.T) {
	tb := openTablet(t, testOptions(t.TempDir()))
	apply(t, tb, "r", set("a", "q", 1, "in the memtable only"))
	s, total, err := tb.SampleKeys(1)
	if err != nil || len(s) != 0 || total != 0 {
		t.Fatalf("SampleKeys = %v, %d, %v; want nothing (the memtable is not sampled)", s, total, err)
	}
}

// TestSampleKeysReadsNoDataBlock: sampling a tablet loaded lazily opens
// each of its files once (the tail read a first read would do) and reads
// no data block: a second sampling reads nothing from any SSTable.
func TestSampleKeysReadsNoDataBlock(t *testing.T) {
	dir := t.TempDir()
	tb, _ := sampleFixture(t, dir, 2000)
	want, _, err := tb.SampleKeys(16 << 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	reads, opens := map[string]int{}, map[string]int{}
	faulty := vfs.NewFaulty(vfs.Default)
	faulty.Set(func(op vfs.Op, name string) error {
		if strings.HasSuffix(name, ".sst") {
			mu.Lock()
			defer mu.Unlock()
			switch op {
			case vfs.OpRead:
				reads[name]++
			case vfs.OpOpen:
				opens[name]++
			}
		}
		return nil
	})
	opts := testOptions(dir)
	opts.FS, opts.Create = faulty, false
	tb = openTablet(t, opts)
	total := func(m map[string]int) (n int) {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range m {
			n += c
		}
		return n
	}
	got, _, err := tb.SampleKeys(16 << 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("after a reload: %d samples, want %d", len(got), len(want))
	}
	files := tb.Stats().Families["a"].SSTables + tb.Stats().Families["b"].SSTables
	if n := total(opens); len(opens) != files || n != files {
		t.Fatalf("sampling opened %d of %d files (%d opens), want each once", len(opens), files, n)
	}
	first := total(reads)
	t.Logf("first sampling: %d files opened, %d reads", files, first)
	if _, _, err := tb.SampleKeys(16 << 10); err != nil {
		t.Fatal(err)
	}
	if n := total(reads) - first; n != 0 {
		t.Fatalf("a sampling of open files read %d times from SSTables, want none (no data block)", n)
	}
}

// sampleKeysByEntries is SampleKeys as first written: each block's index
// entry copied (IndexEntries) and its row decoded, then sorted. It stays
// as the reference the arena version must agree with, and as the "before"
// of BenchmarkSampleKeys.
func sampleKeysByEntries(t *Tablet, every uint64) ([]Sample, uint64, error) {
	v, err := t.currentVersion()
	if err != nil {
		return nil, 0, err
	}
	defer v.unref()
	type point struct {
		row  []byte
		size uint64
	}
	var pts []point
	for _, name := range t.schema.Load().names {
		for _, f := range v.files[name] {
			rd, err := f.reader()
			if err != nil {
				return nil, 0, err
			}
			entries := rd.IndexEntries(f.lower(), f.upper())
			pts = slices.Grow(pts, len(entries))
			for _, e := range entries {
				if row, ok := rowOfKey(e.LastKey); ok {
					pts = append(pts, point{row, e.Size})
				}
			}
		}
	}
	slices.SortFunc(pts, func(a, b point) int { return bytes.Compare(a.row, b.row) })
	inside := func(r []byte) bool {
		return len(r) > 0 && (t.start == nil || bytes.Compare(r, t.start) > 0) && (t.end == nil || bytes.Compare(r, t.end) < 0)
	}
	var out []Sample
	var acc uint64
	next := every
	for i, p := range pts {
		if i > 0 && bytes.Equal(p.row, pts[i-1].row) {
			acc += p.size
			continue
		}
		if acc >= next && inside(p.row) {
			out = append(out, Sample{Row: p.row, Offset: acc})
			next = acc + every
		}
		acc += p.size
	}
	return out, acc, nil
}

// TestSampleKeysOfRowsLargerThanABlock: rows spanning many blocks count
// whole before the next row (their blocks are one point), as the
// reference that keeps every block's entry counts them.
func TestSampleKeysOfRowsLargerThanABlock(t *testing.T) {
	opts := testOptions(t.TempDir())
	opts.Families = []families.Family{{Name: "a", BlockSize: families.MinBlockSize}, {Name: "b", BlockSize: families.MinBlockSize}}
	tb := openTablet(t, opts)
	val := strings.Repeat("x", 500)
	for i := range 300 {
		var muts []cell.Mutation
		cells := 1
		if i%10 == 0 {
			cells = 20 // 10 KB: about ten 1 KiB blocks
		}
		for c := range cells {
			muts = append(muts, set([]string{"a", "b"}[i%2], fmt.Sprintf("q%02d", c), 1, val))
		}
		apply(t, tb, fmt.Sprintf("row%03d", i), muts...)
		if i == 150 {
			if err := tb.Flush(bg); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	for _, every := range []uint64{1, 2 << 10, 8 << 10, 32 << 10} {
		got, total, err := tb.SampleKeys(every)
		ref, refTotal, rerr := sampleKeysByEntries(tb, every)
		if err != nil || rerr != nil || total != refTotal || !reflect.DeepEqual(got, ref) {
			t.Fatalf("every %d: %d samples, total %d, %v; reference %d, %d, %v", every, len(got), total, err, len(ref), refTotal, rerr)
		}
		// Every row that ends a block (of about two rows' cells) is one.
		if every == 1 && len(got) < 100 {
			t.Fatalf("every byte: %d samples of 300 rows, want one per row ending a block", len(got))
		}
	}
}
