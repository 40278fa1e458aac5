package load

import (
	"fmt"
	"math"
	"testing"
)

func keys(ks ...string) [][]byte {
	out := make([][]byte, len(ks))
	for i, k := range ks {
		out[i] = []byte(k)
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestHalveEvenLoad(t *testing.T) {
	w := Window{Keys: keys("a", "b", "c", "d", "e", "f", "g", "h", "i", "j"), Sampled: 10}
	c := Halve([]Window{w}, nil, nil)
	if string(c.Key) != "f" || !near(c.Left, 0.5) || c.Requests != 10 || !near(c.TopShare, 0.1) {
		t.Fatalf("cut %+v, want key f with half the load on each side", c)
	}
}

// A window's keys stand for its requests, not for themselves: two keys of
// a window of 1,000 requests outweigh ten keys of a window of 10. The
// unweighted median of the twelve keys would be g.
func TestHalveWeighsWindowsByTheirRequests(t *testing.T) {
	busy := Window{Keys: keys("a", "b"), Sampled: 1000}
	quiet := Window{Keys: keys("c", "d", "e", "f", "g", "h", "i", "j", "k", "l"), Sampled: 10}
	c := Halve([]Window{busy, quiet}, nil, nil)
	if string(c.Key) != "b" {
		t.Fatalf("cut at %q, want b: a carries 500 of 1010 requests", c.Key)
	}
	if !near(c.Left, 500.0/1010) || c.Requests != 1010 {
		t.Fatalf("left share %v over %d requests, want 500/1010 over 1010", c.Left, c.Requests)
	}
}

// The cut is a sampled row strictly above the range's start, even when
// the start row itself carries the load below the median.
func TestHalveNeverCutsAtTheStart(t *testing.T) {
	w := Window{Keys: keys("k", "k", "k", "k", "m"), Sampled: 5}
	c := Halve([]Window{w}, []byte("k"), nil)
	if string(c.Key) != "m" || !near(c.Left, 0.8) {
		t.Fatalf("cut %+v, want m with 0.8 on the left", c)
	}
	if string(c.Top) != "k" || !near(c.TopShare, 0.8) {
		t.Fatalf("top %q %v, want k 0.8", c.Top, c.TopShare)
	}
}

func TestHalveOneRowHasNoCut(t *testing.T) {
	w := Window{Keys: keys("r", "r", "r"), Sampled: 300}
	c := Halve([]Window{w}, nil, nil)
	if c.Key != nil || string(c.Top) != "r" || !near(c.TopShare, 1) {
		t.Fatalf("cut %+v, want none and r carrying all", c)
	}
	if c := Halve(nil, nil, nil); c.Key != nil || c.Top != nil || c.Requests != 0 {
		t.Fatalf("cut of nothing: %+v", c)
	}
	if c := Halve([]Window{{Sampled: 5}}, nil, nil); c.Key != nil {
		t.Fatalf("cut of a window without keys: %+v", c)
	}
}

func TestHalveIgnoresRowsOutsideTheRange(t *testing.T) {
	w := Window{Keys: keys("a", "a", "a", "m", "n", "o", "p", "z", "z", "z"), Sampled: 10}
	c := Halve([]Window{w}, []byte("m"), []byte("q"))
	if string(c.Key) != "o" || !near(c.Left, 0.5) {
		t.Fatalf("cut %+v, want o: only m..p are in [m, q)", c)
	}
}

// A skewed sample: 90% of requests on a000..a099, 10% on b000..b899. The
// cut falls inside the hot range, near its middle.
func TestHalveSkewedLoad(t *testing.T) {
	var ks []string
	for i := range 900 {
		ks = append(ks, fmt.Sprintf("a%03d", i%100))
	}
	for i := range 100 {
		ks = append(ks, fmt.Sprintf("b%03d", i*9))
	}
	c := Halve([]Window{{Keys: keys(ks...), Sampled: 1000}}, nil, nil)
	if k := string(c.Key); k < "a050" || k > "a060" || c.Left < 0.45 || c.Left > 0.55 {
		t.Fatalf("cut %+v, want a key near a055 with about half on the left", c)
	}
}
