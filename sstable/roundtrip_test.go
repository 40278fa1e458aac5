package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/vfs"
)

var (
	allCompressions = []families.Compression{families.CompressionNone, families.CompressionSnappy, families.CompressionZstd}
	allBlooms       = []families.Bloom{families.BloomNone, families.BloomRow, families.BloomRowColumn}
)

// expectedProperties computes what the writer must report for entries.
func expectedProperties(entries []kv, opts WriterOptions) Properties {
	p := Properties{Compression: opts.Compression, Bloom: opts.Bloom}
	for i, e := range entries {
		p.NumEntries++
		p.RawKeySize += uint64(len(e.key))
		p.RawValueSize += uint64(len(e.value))
		if i == 0 || e.k.Seq < p.MinSeq {
			p.MinSeq = e.k.Seq
		}
		p.MaxSeq = max(p.MaxSeq, e.k.Seq)
		switch e.k.Kind {
		case cell.KindDeleteFamily:
			p.NumDeleteFamily++
		case cell.KindDeleteColumn:
			p.NumDeleteColumn++
		case cell.KindSet:
			if p.NumCells == 0 || e.k.Timestamp < p.MinTimestamp {
				p.MinTimestamp = e.k.Timestamp
			}
			p.MaxTimestamp = max(p.MaxTimestamp, e.k.Timestamp)
			p.NumCells++
		}
	}
	if len(entries) > 0 {
		p.SmallestKey = entries[0].key
		p.LargestKey = entries[len(entries)-1].key
	}
	return p
}

func checkProperties(t *testing.T, got *Properties, want Properties) {
	t.Helper()
	g := *got
	if !bytes.Equal(g.SmallestKey, want.SmallestKey) || !bytes.Equal(g.LargestKey, want.LargestKey) {
		t.Errorf("key range [%q, %q], want [%q, %q]", g.SmallestKey, g.LargestKey, want.SmallestKey, want.LargestKey)
	}
	g.SmallestKey, g.LargestKey, want.SmallestKey, want.LargestKey = nil, nil, nil, nil
	// Sizes that depend on the encoding are checked for plausibility only.
	if g.NumEntries > 0 && (g.NumDataBlocks == 0 || g.DataSize == 0 || g.FileSize <= g.DataSize) {
		t.Errorf("implausible sizes: %d blocks, data %d, file %d", g.NumDataBlocks, g.DataSize, g.FileSize)
	}
	g.NumDataBlocks, g.DataSize, g.FileSize = 0, 0, 0
	if !reflect.DeepEqual(g, want) {
		t.Errorf("properties\n got %+v\nwant %+v", g, want)
	}
}

// between returns a key greater than k and smaller than any longer or
// larger cell key after it.
func between(k []byte) []byte { return append(bytes.Clone(k), 0) }

func TestRoundTripAllCompressionsAndBlooms(t *testing.T) {
	rng := testRand(t)
	dir := t.TempDir()
	cache := NewCache(8 << 20)
	for _, c := range allCompressions {
		for _, b := range allBlooms {
			t.Run(fmt.Sprintf("%v/%v", c, b), func(t *testing.T) {
				entries := randomEntries(rng, 1500, 300)
				opts := WriterOptions{
					Compression:     c,
					Bloom:           b,
					BlockSize:       512 + rng.Intn(2048),
					RestartInterval: []int{1, 3, 16}[rng.Intn(3)],
				}
				path, wprops := writeTable(t, dir, opts, entries)
				want := expectedProperties(entries, opts)
				checkProperties(t, &wprops, want)
				if wprops.NumDataBlocks < 20 {
					t.Fatalf("only %d data blocks; the test wants many", wprops.NumDataBlocks)
				}
				ropts := ReaderOptions{}
				if rng.Intn(2) == 0 {
					ropts.Cache = cache
				}
				r := openTable(t, path, ropts)
				checkProperties(t, r.Properties(), want)
				if r.Properties().FileSize != wprops.FileSize || r.Properties().DataSize != wprops.DataSize {
					t.Errorf("reader sizes %d/%d, writer %d/%d", r.Properties().FileSize, r.Properties().DataSize, wprops.FileSize, wprops.DataSize)
				}
				if st, _ := vfs.Default.Stat(path); uint64(st.Size) != wprops.FileSize {
					t.Errorf("FileSize %d, file has %d bytes", wprops.FileSize, st.Size)
				}

				it := r.NewIter(nil, nil)
				sameEntries(t, "full scan", collect(t, it), entries)
				checkSeeks(t, it, entries)
				if err := it.Close(); err != nil {
					t.Fatal(err)
				}
				checkBoundedIters(t, rng, r, entries)
				checkIndex(t, rng, r, entries)
				checkBloomNoFalseNegatives(t, r, entries)
			})
		}
	}
}

func checkSeeks(t *testing.T, it *Iter, entries []kv) {
	t.Helper()
	for i, e := range entries {
		if !it.SeekGE(e.key) || !bytes.Equal(it.Key(), e.key) || !bytes.Equal(it.Value(), e.value) {
			t.Fatalf("SeekGE(entry %d %q): valid=%v key %q err %v", i, e.key, it.Valid(), it.Key(), it.Err())
		}
		ok := it.SeekGE(between(e.key))
		if i+1 == len(entries) {
			if ok {
				t.Fatalf("SeekGE past the last key found %q", it.Key())
			}
			continue
		}
		if !ok || !bytes.Equal(it.Key(), entries[i+1].key) {
			t.Fatalf("SeekGE(between %d and %d): valid=%v key %q, want %q", i, i+1, ok, it.Key(), entries[i+1].key)
		}
		// Next after a seek continues in order.
		if i+2 < len(entries) && (!it.Next() || !bytes.Equal(it.Key(), entries[i+2].key)) {
			t.Fatalf("Next after SeekGE: key %q, want %q", it.Key(), entries[i+2].key)
		}
	}
	if !it.SeekGE(nil) || !bytes.Equal(it.Key(), entries[0].key) {
		t.Fatalf("SeekGE(nil) = %q, want the first key", it.Key())
	}
	if it.Err() != nil {
		t.Fatal(it.Err())
	}
}

// randomBound returns nil, an existing key, or a key between entries.
func randomBound(rng *rand.Rand, entries []kv) []byte {
	switch rng.Intn(4) {
	case 0:
		return nil
	case 1:
		return between(entries[rng.Intn(len(entries))].key)
	case 2:
		return cell.EncodeRow(entries[rng.Intn(len(entries))].k.Row)
	}
	return bytes.Clone(entries[rng.Intn(len(entries))].key)
}

func inRange(k, lower, upper []byte) bool {
	return (lower == nil || bytes.Compare(k, lower) >= 0) && (upper == nil || bytes.Compare(k, upper) < 0)
}

func checkBoundedIters(t *testing.T, rng *rand.Rand, r *Reader, entries []kv) {
	t.Helper()
	for n := 0; n < 40; n++ {
		lower, upper := randomBound(rng, entries), randomBound(rng, entries)
		var want []kv
		for _, e := range entries {
			if inRange(e.key, lower, upper) {
				want = append(want, e)
			}
		}
		it := r.NewIter(lower, upper)
		what := fmt.Sprintf("[%q, %q)", lower, upper)
		sameEntries(t, what, collect(t, it), want)
		// Seeks clamp to the bounds.
		for s := 0; s < 20; s++ {
			target := randomBound(rng, entries)
			j := sort.Search(len(want), func(i int) bool { return bytes.Compare(want[i].key, target) >= 0 })
			ok := it.SeekGE(target)
			if j == len(want) {
				if ok {
					t.Fatalf("%s SeekGE(%q) found %q, want nothing", what, target, it.Key())
				}
				continue
			}
			if !ok || !bytes.Equal(it.Key(), want[j].key) {
				t.Fatalf("%s SeekGE(%q) = %v %q, want %q", what, target, ok, it.Key(), want[j].key)
			}
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func checkIndex(t *testing.T, rng *rand.Rand, r *Reader, entries []kv) {
	t.Helper()
	all := r.IndexEntries(nil, nil)
	if uint64(len(all)) != r.Properties().NumDataBlocks {
		t.Fatalf("%d index entries, %d data blocks", len(all), r.Properties().NumDataBlocks)
	}
	var sum uint64
	for _, e := range all {
		sum += e.Size
	}
	if sum != r.Properties().DataSize || r.ApproximateSize(nil, nil) != sum {
		t.Fatalf("index sizes sum to %d, ApproximateSize %d, DataSize %d", sum, r.ApproximateSize(nil, nil), r.Properties().DataSize)
	}
	if !bytes.Equal(all[len(all)-1].LastKey, entries[len(entries)-1].key) {
		t.Fatalf("last index key %q, want the last key", all[len(all)-1].LastKey)
	}
	// blockOf returns the index of the block holding key.
	blockOf := func(k []byte) int {
		return sort.Search(len(all), func(i int) bool { return bytes.Compare(all[i].LastKey, k) >= 0 })
	}
	for n := 0; n < 50; n++ {
		lower, upper := randomBound(rng, entries), randomBound(rng, entries)
		got := r.IndexEntries(lower, upper)
		var size uint64
		for _, e := range got {
			size += e.Size
		}
		if size != r.ApproximateSize(lower, upper) {
			t.Fatalf("[%q, %q): IndexEntries sum %d, ApproximateSize %d", lower, upper, size, r.ApproximateSize(lower, upper))
		}
		// Every block holding a key of the range is listed, and nothing
		// more than one block beyond the keys on either side.
		first, last := -1, -1
		for _, e := range entries {
			if inRange(e.key, lower, upper) {
				if first < 0 {
					first = blockOf(e.key)
				}
				last = blockOf(e.key)
			}
		}
		if first < 0 {
			if len(got) > 1 {
				t.Fatalf("[%q, %q) holds no key but %d blocks are listed", lower, upper, len(got))
			}
			continue
		}
		if len(got) < last-first+1 || len(got) > last-first+2 {
			t.Fatalf("[%q, %q): %d blocks listed, keys span blocks %d..%d", lower, upper, len(got), first, last)
		}
		if !bytes.Equal(got[0].LastKey, all[first].LastKey) {
			t.Fatalf("[%q, %q): first listed block ends at %q, want %q", lower, upper, got[0].LastKey, all[first].LastKey)
		}
	}
}

func checkBloomNoFalseNegatives(t *testing.T, r *Reader, entries []kv) {
	t.Helper()
	for _, e := range entries {
		if !r.MayContainRow(cell.EncodeRow(e.k.Row)) {
			t.Fatalf("MayContainRow(%q) = false for a row in the file", e.k.Row)
		}
		if e.k.Kind != cell.KindDeleteFamily && !r.MayContainColumn(cell.EncodeColumn(e.k.Row, e.k.Qualifier)) {
			t.Fatalf("MayContainColumn(%q, %q) = false for a column in the file", e.k.Row, e.k.Qualifier)
		}
	}
}

func TestAddRejectsKeysOutOfOrder(t *testing.T) {
	f, err := vfs.Default.Create(filepath.Join(t.TempDir(), "x.sst"))
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(f, WriterOptions{})
	defer w.Abort()
	if err := w.Add([]byte("b"), nil); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"b", "a", ""} {
		if err := w.Add([]byte(k), nil); !errors.Is(err, ErrKeyOrder) {
			t.Errorf("Add(%q) after \"b\" = %v, want ErrKeyOrder", k, err)
		}
	}
	if err := w.Add([]byte("c"), nil); err != nil {
		t.Errorf("Add(\"c\") after rejected keys: %v", err)
	}
}

func TestWriterAfterCloseAndAbort(t *testing.T) {
	dir := t.TempDir()
	f, err := vfs.Default.Create(filepath.Join(dir, "x.sst"))
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(f, WriterOptions{})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close = %v, want the first result", err)
	}
	if err := w.Add([]byte("a"), nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after Close = %v, want ErrClosed", err)
	}
	w.Abort() // no effect after Close

	f2, err := vfs.Default.Create(filepath.Join(dir, "y.sst"))
	if err != nil {
		t.Fatal(err)
	}
	w2 := NewWriter(f2, WriterOptions{})
	if err := w2.Add([]byte("a"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	w2.Abort()
	if err := w2.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("Close after Abort = %v, want ErrClosed", err)
	}
	if _, err := Open(filepath.Join(dir, "y.sst"), ReaderOptions{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Open of an aborted file = %v, want ErrCorrupt", err)
	}
}

func TestEmptyTable(t *testing.T) {
	for _, b := range allBlooms {
		path, props := writeTable(t, t.TempDir(), WriterOptions{Bloom: b}, nil)
		if props.NumEntries != 0 || props.NumDataBlocks != 0 || props.SmallestKey != nil {
			t.Errorf("props of an empty table: %+v", props)
		}
		r := openTable(t, path, ReaderOptions{})
		it := r.NewIter(nil, nil)
		if it.First() || it.SeekGE([]byte("a")) || it.Err() != nil {
			t.Errorf("empty table iterates: valid %v err %v", it.Valid(), it.Err())
		}
		_ = it.Close()
		if r.MayContainRow(cell.EncodeRow([]byte("r"))) {
			t.Errorf("empty table may contain a row")
		}
		if len(r.IndexEntries(nil, nil)) != 0 || r.ApproximateSize(nil, nil) != 0 {
			t.Errorf("empty table has index entries")
		}
	}
}

func TestOpaqueKeysAreStoredButNotCounted(t *testing.T) {
	entries := []kv{{key: []byte("a"), value: []byte("1")}, {key: []byte("b"), value: []byte("22")}}
	path, props := writeTable(t, t.TempDir(), WriterOptions{Bloom: families.BloomRowColumn}, entries)
	if props.NumEntries != 2 || props.NumCells != 0 || props.RawValueSize != 3 {
		t.Errorf("props %+v", props)
	}
	r := openTable(t, path, ReaderOptions{})
	it := r.NewIter(nil, nil)
	sameEntries(t, "opaque keys", collect(t, it), entries)
	_ = it.Close()
}

func TestHugeValue(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 64 MiB")
	}
	rng := testRand(t)
	value := make([]byte, 64<<20)
	rng.Read(value[:1<<20])
	for i := 1 << 20; i < len(value); i += 1 << 20 {
		copy(value[i:], value[:1<<20]) // compressible at large distances only
	}
	dir := t.TempDir()
	for _, c := range []families.Compression{families.CompressionSnappy} {
		small := []kv{
			{key: cell.AppendKey(nil, cell.Key{Row: []byte("a"), Kind: cell.KindSet, Timestamp: 1}), value: []byte("x")},
			{key: cell.AppendKey(nil, cell.Key{Row: []byte("b"), Kind: cell.KindSet, Timestamp: 1}), value: value},
			{key: cell.AppendKey(nil, cell.Key{Row: []byte("c"), Kind: cell.KindSet, Timestamp: 1}), value: []byte("y")},
		}
		path, props := writeTable(t, dir, WriterOptions{Compression: c}, small)
		if props.NumDataBlocks != 3 {
			t.Errorf("%v: %d data blocks, want 3 (the huge value in a block of its own)", c, props.NumDataBlocks)
		}
		r := openTable(t, path, ReaderOptions{Cache: NewCache(256 << 20)})
		it := r.NewIter(nil, nil)
		sameEntries(t, c.String(), collect(t, it), small)
		if !it.SeekGE(small[1].key) || !bytes.Equal(it.Value(), value) {
			t.Errorf("%v: SeekGE to the huge value failed: %v", c, it.Err())
		}
		_ = it.Close()
	}
}

// A scan that skips rows seeks once per row; seeks landing in the block
// the iterator holds must not read it again, and a huge value lives in a
// block of its own, so seeks to the small rows around it never read it.
// Before, a filtered scan over 20k small rows next to a 60 MiB cell
// decompressed the 60 MiB block once per row.
func TestSeeksReuseTheBlockTheyHold(t *testing.T) {
	huge := bytes.Repeat([]byte("h"), 1<<20)
	var entries []kv
	for i := range 2000 {
		row := []byte(fmt.Sprintf("r%05d", i))
		v := []byte("small")
		if i == 1000 {
			v = huge
		}
		entries = append(entries, kv{key: cell.AppendKey(nil, cell.Key{Row: row, Kind: cell.KindSet, Timestamp: 1}), value: v})
	}
	path, props := writeTable(t, t.TempDir(), WriterOptions{BlockSize: 64 << 10}, entries)
	r := openTable(t, path, ReaderOptions{}) // no cache: every miss reads the file
	it := r.NewIter(nil, nil)
	defer it.Close()
	for i, e := range entries {
		if i == 1000 {
			continue // the scan's filter skips the big row without reading it
		}
		if !it.SeekGE(e.key) || !bytes.Equal(it.Key(), e.key) {
			t.Fatalf("SeekGE(%d): %v", i, it.Err())
		}
	}
	if got := r.blockReads.Load(); got > int64(props.NumDataBlocks)-1 {
		t.Fatalf("%d seeks read %d blocks; the file has %d data blocks, one of them the huge value's", len(entries)-1, got, props.NumDataBlocks)
	}
}
