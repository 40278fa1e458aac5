package client

import (
	"bytes"
	"flag"
	"math/rand"
	"testing"
	"time"
)

var seedFlag = flag.Int64("seed", 0, "seed for randomized tests (0: time)")

func testSeed(t *testing.T) *rand.Rand {
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (replay with -seed %d)", seed, seed)
	return rand.New(rand.NewSource(seed))
}

func TestPrefixEnd(t *testing.T) {
	cases := []struct{ in, want []byte }{
		{[]byte("abc"), []byte("abd")},
		{[]byte("a\xff"), []byte("b")},
		{[]byte("\xff\xff"), nil},
		{nil, nil},
	}
	for _, c := range cases {
		if got := prefixEnd(c.in); !bytes.Equal(got, c.want) || (c.want == nil) != (got == nil) {
			t.Errorf("prefixEnd(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestRowSetMatchesModel checks contains, first and clip of random row
// sets against a brute-force model over a small key universe.
func TestRowSetMatchesModel(t *testing.T) {
	r := testSeed(t)
	var universe [][]byte
	for _, a := range "abcd" {
		universe = append(universe, []byte{byte(a)})
		for _, b := range "abcd" {
			universe = append(universe, []byte{byte(a), byte(b)})
		}
	}
	key := func() []byte {
		if r.Intn(8) == 0 {
			return nil
		}
		return universe[r.Intn(len(universe))]
	}
	for iter := 0; iter < 2000; iter++ {
		var sets []RowSet
		var inModel []func([]byte) bool
		for n := r.Intn(4); n >= 0; n-- {
			switch r.Intn(3) {
			case 0:
				k := universe[r.Intn(len(universe))]
				sets = append(sets, SingleRow(k))
				inModel = append(inModel, func(x []byte) bool { return bytes.Equal(x, k) })
			case 1:
				s, e := key(), key()
				sets = append(sets, NewRange(s, e))
				inModel = append(inModel, func(x []byte) bool {
					return bytes.Compare(x, s) >= 0 && (len(e) == 0 || bytes.Compare(x, e) < 0)
				})
			case 2:
				p := key()
				sets = append(sets, PrefixRange(p))
				inModel = append(inModel, func(x []byte) bool { return bytes.HasPrefix(x, p) })
			}
		}
		set := Union(sets...).spans()
		model := func(x []byte) bool {
			for _, f := range inModel {
				if f(x) {
					return true
				}
			}
			return false
		}
		for _, x := range universe {
			if set.contains(x) != model(x) {
				t.Fatalf("iter %d: contains(%q) = %v, model %v (set %+v)", iter, x, !model(x), model(x), set)
			}
		}
		pos := key()
		if pos == nil {
			pos = []byte{}
		}
		got, ok := set.first(pos)
		var want []byte
		for _, x := range universe {
			if bytes.Compare(x, pos) >= 0 && model(x) {
				want = x
				break
			}
		}
		// first may answer a position that is not in the universe (the
		// start of a range); it must not be after the model's answer and
		// nothing of the set may lie between pos and it.
		if want != nil && (!ok || bytes.Compare(got, want) > 0) {
			t.Fatalf("iter %d: first(%q) = %q, %v; model says %q (set %+v)", iter, pos, got, ok, want, set)
		}
		if ok && !set.contains(got) {
			t.Fatalf("iter %d: first(%q) = %q is not in the set", iter, pos, got)
		}
		hi := key()
		clipped := set.clip(pos, hi)
		for _, x := range universe {
			in := bytes.Compare(x, pos) >= 0 && (len(hi) == 0 || bytes.Compare(x, hi) < 0) && model(x)
			if inSet(clipped, x) != in {
				t.Fatalf("iter %d: clip(%q, %q) has %q = %v, want %v (%v)", iter, pos, hi, x, !in, in, clipped)
			}
		}
	}
}
