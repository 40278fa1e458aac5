package tablet

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/tabuladb/tabula/cell"
)

// TestSkiplistRandomizedModel inserts runs of ascending, descending, random
// and repeated keys (through insert and through insertKey's in-place
// encoding), checking iteration, SeekGE and bounds against a sorted model
// after every round, while lock-free readers iterate and seek concurrently
// (under -race this checks that a node is published only once built). The
// runs exercise the insert splice (findSplice) from every side.
func TestSkiplistRandomizedModel(t *testing.T) {
	seed := skiplistTestSeed(t)
	r := rand.New(rand.NewPCG(seed, 11))
	s := newSkiplist()
	model := map[string]string{}

	// published holds keys readers may look for: every one is linked.
	var pubMu sync.Mutex
	var published [][]byte
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, 4)
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rr := rand.New(rand.NewPCG(seed, uint64(100+g)))
			for {
				select {
				case <-done:
					return
				default:
				}
				pubMu.Lock()
				var want []byte
				if len(published) > 0 {
					want = published[rr.IntN(len(published))]
				}
				pubMu.Unlock()
				before := s.count.Load()
				n := int64(0)
				var prev []byte
				it := &skipIter{s: s}
				for ok := it.First(); ok; ok = it.Next() {
					if prev != nil && bytes.Compare(prev, it.Key()) >= 0 {
						errs <- fmt.Errorf("reader: keys out of order: %q then %q", prev, it.Key())
						return
					}
					prev = append(prev[:0], it.Key()...)
					n++
				}
				if n < before {
					errs <- fmt.Errorf("reader: saw %d entries, %d were linked before it started", n, before)
					return
				}
				if want != nil {
					it := &skipIter{s: s}
					if !it.SeekGE(want) || !bytes.Equal(it.Key(), want) {
						errs <- fmt.Errorf("reader: SeekGE(%q) missed a published key", want)
						return
					}
				}
			}
		}(g)
	}

	randKey := func() []byte {
		k := make([]byte, 1+r.IntN(12))
		for j := range k {
			k[j] = "\x00\x01abcz"[r.IntN(6)]
		}
		return k
	}
	var counter int
	add := func(k []byte) {
		v := fmt.Sprintf("v%d", counter)
		counter++
		if r.IntN(2) == 0 {
			s.insert(k, []byte(v))
		} else {
			// The same key through insertKey: k is the row of a cell
			// key; the model holds its encoding.
			ck := cell.Key{Row: k, Qualifier: []byte("q\x00"), Timestamp: 7, Seq: 9, Kind: cell.KindSet}
			k = cell.AppendKey(nil, ck)
			s.insertKey(ck, []byte(v))
		}
		if _, ok := model[string(k)]; !ok {
			model[string(k)] = v
		}
		pubMu.Lock()
		published = append(published, k)
		pubMu.Unlock()
	}
	for round := 0; round < 30; round++ {
		n := 1 + r.IntN(300)
		base := randKey()
		switch pattern := r.IntN(4); pattern {
		case 0: // ascending from a random key
			for i := 0; i < n; i++ {
				add(fmt.Appendf(bytes.Clone(base), "%06d", i))
			}
		case 1: // descending
			for i := n; i > 0; i-- {
				add(fmt.Appendf(bytes.Clone(base), "%06d", i))
			}
		case 2: // random
			for i := 0; i < n; i++ {
				add(randKey())
			}
		case 3: // repeats of keys already in
			keys := published
			for i := 0; i < n && len(keys) > 0; i++ {
				k := keys[r.IntN(len(keys))]
				if r.IntN(2) == 0 {
					s.insert(k, []byte("dup"))
				} else {
					add(k) // a row key again, or an encoded key as a row
				}
			}
		}
		checkSkiplistModel(t, r, s, model)
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := s.count.Load(); got != int64(len(model)) {
		t.Fatalf("list counts %d entries, the model %d", got, len(model))
	}
}

// checkSkiplistModel compares a full iteration and random bounded seeks of s
// with the model.
func checkSkiplistModel(t *testing.T, r *rand.Rand, s *skiplist, model map[string]string) {
	t.Helper()
	keys := make([]string, 0, len(model))
	for k := range model {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	i := 0
	it := &skipIter{s: s}
	for ok := it.First(); ok; ok = it.Next() {
		if i >= len(keys) || string(it.Key()) != keys[i] || string(it.Value()) != model[keys[i]] {
			t.Fatalf("entry %d: got %q=%q, want %q", i, it.Key(), it.Value(), keys[min(i, len(keys)-1)])
		}
		i++
	}
	if i != len(keys) {
		t.Fatalf("iterated %d entries, want %d", i, len(keys))
	}
	if err := checkSkiplistLevels(s); err != nil {
		t.Fatal(err)
	}
	pick := func() []byte {
		if len(keys) > 0 && r.IntN(2) == 0 {
			k := []byte(keys[r.IntN(len(keys))])
			if r.IntN(3) == 0 {
				k = append(k, 0) // just after it
			}
			return k
		}
		k := make([]byte, r.IntN(4))
		for j := range k {
			k[j] = "\x00\x01abcz"[r.IntN(6)]
		}
		return k
	}
	for n := 0; n < 20; n++ {
		var lo, hi []byte
		if r.IntN(2) == 0 {
			lo = pick()
		}
		if r.IntN(2) == 0 {
			hi = pick()
		}
		seek := pick()
		it := &skipIter{s: s, lower: lo, upper: hi}
		var got []string
		for ok := it.SeekGE(seek); ok; ok = it.Next() {
			got = append(got, string(it.Key()))
		}
		var want []string
		for _, k := range keys {
			if k >= string(seek) && (lo == nil || k >= string(lo)) && (hi == nil || k < string(hi)) {
				want = append(want, k)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("SeekGE(%q) in [%q, %q): got %d keys %q, want %d %q", seek, lo, hi, len(got), got, len(want), want)
		}
	}
}

// checkSkiplistLevels checks that every level of s is in key order and holds
// only nodes tall enough for it, and that every node of a level above 0 is
// on the level below: a search relies on each, iteration on level 0 alone.
func checkSkiplistLevels(s *skiplist) error {
	chunks := *s.chunks.Load()
	var below map[nodeRef]bool
	for level := 0; level < maxHeight; level++ {
		on := map[nodeRef]bool{}
		var prev []byte
		for n := s.headTower[level].Load(); n != 0; {
			b := s.nodeBytes(&chunks, n)
			if h := int(binary.LittleEndian.Uint32(b[8:])); h <= level {
				return fmt.Errorf("level %d links a node of height %d", level, h)
			}
			if prev != nil && bytes.Compare(prev, nodeKey(b)) >= 0 {
				return fmt.Errorf("level %d out of order: %q then %q", level, prev, nodeKey(b))
			}
			if below != nil && !below[n] {
				return fmt.Errorf("level %d links %q, which level %d misses", level, nodeKey(b), level-1)
			}
			on[n], prev = true, nodeKey(b)
			n = towerAt(b, level).Load()
		}
		if level >= int(s.height.Load()) && len(on) > 0 {
			return fmt.Errorf("level %d is above the height %d but links %d nodes", level, s.height.Load(), len(on))
		}
		below = on
	}
	return nil
}
