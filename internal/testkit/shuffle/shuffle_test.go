package shuffle

import (
	"math"
	"testing"
)

// TestAtVisitsEveryIndexOnce checks the promise: every integer of [0, n)
// exactly once, for sizes around powers of two and four.
func TestAtVisitsEveryIndexOnce(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 1000, 1023, 1024, 1025, 4095, 4096, 4097, 100003} {
		for _, seed := range []int64{0, 1, -7} {
			p := New(n, seed)
			seen := make([]bool, n)
			for i := range n {
				v := p.At(i)
				if v < 0 || v >= n || seen[v] {
					t.Fatalf("n=%d seed=%d: At(%d)=%d is out of range or repeated", n, seed, i, v)
				}
				seen[v] = true
			}
		}
	}
}

// TestSeedsGiveDifferentOrders: the seed selects the order, and the same
// seed gives the same one.
func TestSeedsGiveDifferentOrders(t *testing.T) {
	const n = 1000
	a, b, c := New(n, 1), New(n, 2), New(n, 1)
	same := 0
	for i := range n {
		if a.At(i) != c.At(i) {
			t.Fatalf("seed 1 gave two orders at %d", i)
		}
		if a.At(i) == b.At(i) {
			same++
		}
	}
	if same > 20 {
		t.Errorf("seeds 1 and 2 agree at %d of %d places", same, n)
	}
}

// TestOrderLooksRandom: neighbours in the order are not neighbours in
// value (an identity-like or strided order would be), and each quarter
// of the order holds about a quarter of each quarter of the values.
func TestOrderLooksRandom(t *testing.T) {
	const n = 1 << 16
	p := New(n, 42)
	near := 0
	var counts [4][4]int
	for i := range n {
		v := p.At(i)
		if i > 0 && math.Abs(float64(v-p.At(i-1))) < 64 {
			near++
		}
		counts[i*4/n][v*4/n]++
	}
	// Random order: P(|diff| < 64) is about 128/n, so about 128 cases.
	if near > 400 {
		t.Errorf("%d consecutive pairs are closer than 64", near)
	}
	for q, row := range counts {
		for vq, c := range row {
			if c < n/16*9/10 || c > n/16*11/10 {
				t.Errorf("quarter %d of the order holds %d values of quarter %d, want about %d", q, c, vq, n/16)
			}
		}
	}
}

func TestBadArgumentsPanic(t *testing.T) {
	for name, f := range map[string]func(){
		"negative count": func() { New(-1, 0) },
		"index past n":   func() { New(3, 0).At(3) },
		"negative index": func() { New(3, 0).At(-1) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

func BenchmarkAt(b *testing.B) {
	p := New(4_000_000, 1)
	s := 0
	for i := 0; b.Loop(); i++ {
		s += p.At(i % 4_000_000)
	}
	_ = s
}
