package export

import (
	"bytes"
	"testing"

	"github.com/tabuladb/tabula/client"
)

func TestSplitRange(t *testing.T) {
	var samples []client.KeySample
	for i := range 100 {
		samples = append(samples, client.KeySample{Key: []byte{byte('a' + i/10), byte('0' + i%10)}, OffsetBytes: int64(i+1) * 1000})
	}
	for _, tc := range []struct {
		start, end []byte
		n          int
	}{{nil, nil, 4}, {nil, nil, 1}, {[]byte("c"), []byte("f"), 3}, {[]byte("c"), nil, 7}, {nil, nil, 500}} {
		rs := SplitRange(samples, tc.start, tc.end, tc.n)
		if len(rs) < 1 || len(rs) > tc.n {
			t.Fatalf("%q..%q into %d: %d ranges", tc.start, tc.end, tc.n, len(rs))
		}
		// Contiguous, covering [start, end), each range non-empty.
		if !bytes.Equal(rs[0][0], tc.start) || !bytes.Equal(rs[len(rs)-1][1], tc.end) {
			t.Errorf("ranges %q do not cover %q..%q", rs, tc.start, tc.end)
		}
		for i := range rs {
			if i > 0 && !bytes.Equal(rs[i-1][1], rs[i][0]) {
				t.Errorf("gap between %q and %q", rs[i-1], rs[i])
			}
			if rs[i][1] != nil && bytes.Compare(rs[i][0], rs[i][1]) >= 0 {
				t.Errorf("empty range %q", rs[i])
			}
		}
		if tc.n <= 10 && len(rs) != tc.n {
			t.Errorf("%q..%q into %d: %d ranges %q", tc.start, tc.end, tc.n, len(rs), rs)
		}
	}
	// Equal sizes: 100 samples of 1000 bytes into 4 cut near 25, 50, 75.
	rs := SplitRange(samples, nil, nil, 4)
	for i, want := range []string{"c4", "f0", "h5"} {
		if got := string(rs[i][1]); got < want[:1] || got > string(want[0]+1) {
			t.Errorf("cut %d at %q, want near %q", i, got, want)
		}
	}
	if rs := SplitRange(nil, nil, nil, 4); len(rs) != 1 {
		t.Errorf("no samples: %q, want one range", rs)
	}
}
