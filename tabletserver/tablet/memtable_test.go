package tablet

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
)

var skiplistSeed = flag.Uint64("skiplist.seed", 0, "seed of the skiplist tests (0 = random); also env TABULA_SKIPLIST_SEED")

func skiplistTestSeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("TABULA_SKIPLIST_SEED"), 10, 64); err == nil && s != 0 {
		seed = s
	}
	if *skiplistSeed != 0 {
		seed = *skiplistSeed
	}
	t.Logf("seed %d (replay with -skiplist.seed %d)", seed, seed)
	return seed
}

// TestSkiplistMatchesModel inserts random keys and values (some larger than
// a chunk, some duplicates) and checks iteration, seeks and bounds against a
// sorted model.
func TestSkiplistMatchesModel(t *testing.T) {
	r := rand.New(rand.NewPCG(skiplistTestSeed(t), 7))
	s := newSkiplist()
	model := map[string][]byte{}
	for i := 0; i < 3000; i++ {
		k := make([]byte, 1+r.IntN(40))
		for j := range k {
			k[j] = byte('a' + r.IntN(4))
		}
		n := r.IntN(200)
		if r.IntN(500) == 0 {
			n = maxChunk + r.IntN(1000) // an entry with a chunk of its own
		}
		v := make([]byte, n)
		for j := 0; j < min(n, 64); j++ {
			v[j] = byte(r.Uint32())
		}
		if _, ok := model[string(k)]; !ok {
			model[string(k)] = bytes.Clone(v)
		}
		s.insert(k, v)
		if len(v) > 0 {
			v[0] ^= 0xff // the list copied the value
		}
	}
	keys := make([]string, 0, len(model))
	for k := range model {
		keys = append(keys, k)
	}
	slices.Sort(keys)

	it := &skipIter{s: s}
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if i >= len(keys) || string(it.Key()) != keys[i] || !bytes.Equal(it.Value(), model[keys[i]]) {
			t.Fatalf("entry %d: got %q, want %q", i, it.Key(), keys[min(i, len(keys)-1)])
		}
		i++
	}
	if i != len(keys) {
		t.Fatalf("iterated %d entries, want %d", i, len(keys))
	}
	for n := 0; n < 500; n++ {
		lo := []byte(fmt.Sprintf("%c%c", 'a'+r.IntN(4), 'a'+r.IntN(4)))
		hi := []byte(fmt.Sprintf("%c%c", 'a'+r.IntN(4), 'a'+r.IntN(5)))
		it := &skipIter{s: s, lower: lo, upper: hi}
		var got []string
		for ok := it.First(); ok; ok = it.Next() {
			got = append(got, string(it.Key()))
		}
		var want []string
		for _, k := range keys {
			if k >= string(lo) && k < string(hi) {
				want = append(want, k)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("[%q, %q): got %d keys, want %d", lo, hi, len(got), len(want))
		}
	}
}

// TestSkiplistConcurrentReaders runs lock-free readers against one writer
// (under -race this checks the publication order) and checks that every
// reader sees a sorted list holding at least what was inserted before it
// started.
func TestSkiplistConcurrentReaders(t *testing.T) {
	seed := skiplistTestSeed(t)
	s := newSkiplist()
	const total = 20000
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, 4)
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				before := s.count.Load()
				var prev []byte
				n := 0
				it := &skipIter{s: s}
				for ok := it.First(); ok; ok = it.Next() {
					if prev != nil && bytes.Compare(prev, it.Key()) >= 0 {
						errs <- fmt.Errorf("keys out of order: %q then %q", prev, it.Key())
						return
					}
					if !bytes.Equal(it.Value(), it.Key()) {
						errs <- fmt.Errorf("key %q has value %q", it.Key(), it.Value())
						return
					}
					prev = append(prev[:0], it.Key()...)
					n++
				}
				if int64(n) < before {
					errs <- fmt.Errorf("saw %d entries after %d were inserted", n, before)
					return
				}
			}
		}()
	}
	r := rand.New(rand.NewPCG(seed, 9))
	for i := 0; i < total; i++ {
		k := []byte(fmt.Sprintf("%016x", r.Uint64()))
		s.insert(k, k)
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestMemtableChargesItsArena: a memtable's bytes are the sizes of its
// lists' chunks (what it holds), never less than what its entries take,
// and at most one chunk per list more.
func TestMemtableChargesItsArena(t *testing.T) {
	r := rand.New(rand.NewPCG(skiplistTestSeed(t), 13))
	m := newMemtable()
	v := make([]byte, 100)
	var data int64 // bytes of encoded keys and values
	for i := 0; i < 20000; i++ {
		row := []byte(fmt.Sprintf("row%08d", r.IntN(1<<20)))
		b := batch{seq: uint64(i + 1), row: row, entries: []entry{
			{family: "a", kind: cell.KindSet, timestamp: 1, value: v[:r.IntN(len(v))]},
			{family: []string{"b", "c"}[r.IntN(2)], kind: cell.KindSet, qualifier: []byte("q"), timestamp: 2, value: v},
		}}
		added := m.insertBatchLocked(&b)
		for _, e := range b.entries {
			data += int64(cell.KeyLen(e.key(b.row, b.seq)) + len(e.value))
		}
		var chunks, slack int64
		for _, s := range *m.lists.Load() {
			for _, c := range *s.chunks.Load() {
				chunks += int64(len(c))
			}
			slack += int64(len(s.cur) - s.used)
		}
		if got := m.bytes.Load(); got != chunks || added < 0 {
			t.Fatalf("after %d batches the memtable counts %d bytes (this one added %d), its chunks hold %d", i+1, got, added, chunks)
		}
		if chunks < data || chunks-slack < data {
			t.Fatalf("after %d batches the chunks hold %d bytes (%d unused), less than the %d bytes of data", i+1, chunks, slack, data)
		}
		if slack > 3*maxChunk {
			t.Fatalf("after %d batches %d bytes of chunks are unused, more than a chunk per list", i+1, slack)
		}
	}
}
