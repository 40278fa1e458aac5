package client

import (
	"fmt"
	"strings"
	"testing"
)

func TestCutRanges(t *testing.T) {
	// Two tablets [,m) [m,): samples and tablet ends with cumulative offsets.
	samples := []KeySample{{[]byte("a"), 100}, {[]byte("b"), 200}, {[]byte("c"), 300}, {[]byte("d"), 400},
		{[]byte("m"), 450}, {[]byte("n"), 550}, {[]byte{}, 600}}
	for _, tc := range []struct {
		start, end string
		target     int64
		want       string
	}{
		{"", "", 200, "[,b)200 [b,d)200 [d,)200"},
		{"bb", "mm", 150, "[bb,d)200 [d,mm)150"},
		// The last range (n to the end, 50) is under half the target: joined.
		{"", "", 250, "[,c)300 [c,)300"},
		{"", "", 1000, "[,)600"},
		{"m", "", 100, "[m,n)100 [n,)50"},
	} {
		got := cutRanges(samples, []byte(tc.start), []byte(tc.end), tc.target)
		if s := render(got); s != tc.want {
			t.Errorf("cutRanges(%q, %q, %d) = %s, want %s", tc.start, tc.end, tc.target, s, tc.want)
		}
	}
	if s := render(cutRanges([]KeySample{{[]byte{}, 0}}, nil, nil, 10)); s != "[,)0" {
		t.Errorf("empty table: %s", s)
	}
}

func render(rs []KeyRange) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("[%s,%s)%d", r.Start, r.End, r.SizeBytes))
	}
	return strings.Join(parts, " ")
}
