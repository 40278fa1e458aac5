package sstable

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"strconv"
	"testing"

	"github.com/tabuladb/tabula/cell"
)

// reverseEntries returns entries over a few rows, some of them large (many
// cells, long values), so that rows span blocks of every size tried.
func reverseEntries(rng *rand.Rand) []kv {
	es := randomEntries(rng, 200+rng.Intn(400), 40)
	seen := map[string]bool{}
	for _, e := range es {
		seen[string(e.key)] = true
	}
	for n := rng.Intn(4); n > 0; n-- {
		row := []byte("row-" + strconv.Itoa(rng.Intn(100)) + "-big")
		for i := 50 + rng.Intn(150); i > 0; i-- {
			k := cell.Key{Row: row, Qualifier: []byte("q" + strconv.Itoa(rng.Intn(30))), Timestamp: rng.Int63n(1 << 40),
				Seq: uint64(rng.Int63n(1 << 40)), Kind: cell.KindSet}
			key := cell.AppendKey(nil, k)
			if seen[string(key)] {
				continue
			}
			seen[string(key)] = true
			es = append(es, kv{key: key, value: bytes.Repeat([]byte{'x'}, rng.Intn(300)), k: k})
		}
	}
	sortEntries(es)
	return es
}

// wantReverse is what a reversed walk of [lower, upper) must yield: the
// entries in range grouped by row, the rows from the last down, each
// row's entries in key order.
func wantReverse(t *testing.T, es []kv, lower, upper []byte) [][]kv {
	var rows [][]kv
	var prev []byte
	for _, e := range es {
		if (lower != nil && bytes.Compare(e.key, lower) < 0) || (upper != nil && bytes.Compare(e.key, upper) >= 0) {
			continue
		}
		p, err := cell.RowPrefix(e.key)
		if err != nil {
			t.Fatal(err)
		}
		if prev == nil || !bytes.Equal(p, prev) {
			rows = append(rows, nil)
			prev = p
		}
		rows[len(rows)-1] = append(rows[len(rows)-1], e)
	}
	slices.Reverse(rows)
	return rows
}

// revBound returns nil, a row's start, or a key inside a row (a
// reversed walk must clip a row cut by a bound).
func revBound(rng *rand.Rand, es []kv) []byte {
	switch rng.Intn(3) {
	case 0:
		return nil
	case 1:
		return cell.EncodeRow(es[rng.Intn(len(es))].k.Row)
	}
	return bytes.Clone(es[rng.Intn(len(es))].key)
}

// TestReverseIterMatchesForward checks ReverseIter against the entries
// written, over tiny to large blocks and restart intervals, with bounds at
// row starts and inside rows.
func TestReverseIterMatchesForward(t *testing.T) {
	rng := testRand(t)
	dir := t.TempDir()
	for round := 0; round < 12; round++ {
		es := reverseEntries(rng)
		opts := WriterOptions{BlockSize: []int{1, 64, 300, 2 << 10, 16 << 10}[rng.Intn(5)], RestartInterval: []int{1, 2, 16}[rng.Intn(3)]}
		path, _ := writeTable(t, dir, opts, es)
		var ropts ReaderOptions
		if rng.Intn(2) == 0 {
			ropts.Cache = NewCache(1 << 20)
		}
		r := openTable(t, path, ropts)
		for q := 0; q < 20; q++ {
			lower, upper := revBound(rng, es), revBound(rng, es)
			if lower != nil && upper != nil && bytes.Compare(lower, upper) > 0 {
				lower, upper = upper, lower
			}
			what := fmt.Sprintf("round %d (block size %d, restart interval %d, %d blocks) [%q, %q)", round, opts.BlockSize, opts.RestartInterval, r.index.len(), lower, upper)
			want := wantReverse(t, es, lower, upper)
			reads := r.blockReads.Load()
			it := r.NewReverseIter(lower, upper)
			var got [][]kv
			for it.PrevRow() {
				var row []kv
				for ok := it.Valid(); ok; ok = it.Next() {
					row = append(row, kv{key: bytes.Clone(it.Key()), value: bytes.Clone(it.Value())})
					if !bytes.HasPrefix(it.Key(), it.RowPrefix()) {
						t.Fatalf("%s: key %q outside the row %q", what, it.Key(), it.RowPrefix())
					}
				}
				got = append(got, row)
			}
			if err := it.Close(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if len(got) != len(want) {
				t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
			}
			for i := range got {
				sameEntries(t, fmt.Sprintf("%s: row %d", what, i), got[i], want[i])
			}
			// Each block is decoded at most twice (a row spanning blocks
			// is read forward from where it begins).
			if lo, hi := r.blocksFor(lower, upper); ropts.Cache == nil && r.blockReads.Load()-reads > int64(2*(hi-lo)) {
				t.Fatalf("%s: %d block reads for %d blocks", what, r.blockReads.Load()-reads, hi-lo)
			}
		}
	}
}

// TestReverseIterRowAcrossManyBlocks: one row in one-entry blocks, between
// two small rows: the walk reads it whole, then goes on below it.
func TestReverseIterRowAcrossManyBlocks(t *testing.T) {
	var es []kv
	add := func(row string, n int) {
		for i := 0; i < n; i++ {
			k := cell.Key{Row: []byte(row), Qualifier: []byte(fmt.Sprintf("q%03d", i)), Timestamp: 1, Seq: 1, Kind: cell.KindSet}
			es = append(es, kv{key: cell.AppendKey(nil, k), value: []byte(row), k: k})
		}
	}
	add("a", 2)
	add("b", 40)
	add("c", 1)
	path, _ := writeTable(t, t.TempDir(), WriterOptions{BlockSize: 1}, es)
	r := openTable(t, path, ReaderOptions{})
	it := r.NewReverseIter(nil, nil)
	defer it.Close()
	var rows []string
	for it.PrevRow() {
		n, name := 0, string(it.Value())
		for ok := it.Valid(); ok; ok = it.Next() {
			if string(it.Value()) != name {
				t.Fatalf("row %s holds an entry of row %s", name, it.Value())
			}
			n++
		}
		rows = append(rows, fmt.Sprintf("%s:%d", name, n))
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(rows); got != "[c:1 b:40 a:2]" {
		t.Fatalf("rows %s, want [c:1 b:40 a:2]", got)
	}
}
