package client

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/rowfilter"
)

func reversed(s string) string {
	b := []byte(s)
	slices.Reverse(b)
	return string(b)
}

func TestReverseScanSpansTabletsFromTheLast(t *testing.T) {
	c := newCluster(t, 3, "g", "p")
	tbl := c.client(t).Open("t")
	fill(t, tbl, alphabet())
	ctx := context.Background()
	cases := []struct {
		name string
		rs   RowSet
		opts []ReadOption
		want string
	}{
		{"whole table", nil, nil, "zyxwvutsrqponmlkjihgfedcba"},
		{"range across all three", NewRange([]byte("e"), []byte("r")), nil, "qponmlkjihgfe"},
		{"limit across tablets", NewRange([]byte("e"), []byte("r")), []ReadOption{LimitRows(10)}, "qponmlkjih"},
		{"limit inside last tablet", nil, []ReadOption{LimitRows(3)}, "zyx"},
		{"limit at tablet start", nil, []ReadOption{LimitRows(11)}, "zyxwvutsrqp"},
		{"key list", RowList([]byte("z"), []byte("a"), []byte("h"), []byte("a"), []byte("zz")), nil, "zha"},
		{"range ending at a tablet start", NewRange([]byte("c"), []byte("p")), nil, "onmlkjihgfedc"},
		{"infinite", InfiniteRange([]byte("x")), nil, "zyx"},
		{"union", Union(NewRange([]byte("b"), []byte("d")), SingleRow([]byte("m")), NewRange([]byte("c"), []byte("e")), SingleRow([]byte("y"))), nil, "ymdcb"},
		{"filter drops rows", nil, []ReadOption{WithFilter(rowfilter.RowKeyRegex("[aeiou]"))}, "uoiea"},
		{"empty range", NewRange([]byte("m"), []byte("m")), nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := keys(t, tbl.ReadRows(ctx, tc.rs, append(tc.opts, Reverse())...)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	for addr, s := range c.servers {
		s.mu.Lock()
		for _, req := range s.reads {
			if !req.GetReversed() {
				t.Errorf("server %s got a read that is not reversed", addr)
			}
		}
		s.mu.Unlock()
	}
	// ReadRow is unaffected.
	if r, err := tbl.ReadRow(ctx, []byte("k"), Reverse()); err != nil || string(r.Key) != "k" || len(r.Cells) != 2 {
		t.Errorf("ReadRow(k, Reverse()) = %+v, %v", r, err)
	}
}

// Random row sets, limits and filters over many tablets: a reversed read
// returns the forward read's rows in the opposite order.
func TestReverseScanIsForwardReversed(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	c := newCluster(t, 3, "c", "f", "g", "m", "n", "t", "w")
	tbl := c.client(t).Open("t")
	var rows []string
	for _, r := range alphabet() {
		rows = append(rows, r, r+"1")
	}
	fill(t, tbl, rows)
	ctx := context.Background()
	letter := func() []byte { return []byte{byte('a' + rng.Intn(27))} }
	for q := 0; q < 100; q++ {
		var sets []RowSet
		var desc []string
		for n := 1 + rng.Intn(4); n > 0; n-- {
			if rng.Intn(2) == 0 {
				k := letter()
				sets = append(sets, SingleRow(k))
				desc = append(desc, string(k))
			} else {
				a, b := letter(), letter()
				if rng.Intn(5) == 0 {
					b = nil
				}
				sets = append(sets, NewRange(a, b))
				desc = append(desc, fmt.Sprintf("[%s,%s)", a, b))
			}
		}
		rs := Union(sets...)
		var opts []ReadOption
		if rng.Intn(3) == 0 {
			opts = append(opts, WithFilter(rowfilter.RowKeyRegex(".*1")))
		}
		var fwd []string
		it := tbl.ReadRows(ctx, rs, opts...)
		for it.Next() {
			fwd = append(fwd, string(it.Row().Key))
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		it.Close()
		slices.Reverse(fwd)
		if rng.Intn(2) == 0 {
			n := 1 + rng.Intn(6)
			opts = append(opts, LimitRows(int64(n)))
			fwd = fwd[:min(n, len(fwd))]
		}
		var got []string
		it = tbl.ReadRows(ctx, rs, append(opts, Reverse())...)
		for it.Next() {
			got = append(got, string(it.Row().Key))
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		it.Close()
		if g, w := strings.Join(got, " "), strings.Join(fwd, " "); g != w {
			t.Fatalf("reversed read of %v (%d options): got %s, want %s", desc, len(opts), g, w)
		}
	}
}

// serverOf returns the fake server holding the tablet of row.
func (c *cluster) serverOf(row string) *fakeServer {
	for _, tab := range c.master.Tablets("t") {
		if contains(tab, []byte(row)) {
			return c.servers[tab.ServerAddress]
		}
	}
	return nil
}

// A reversed scan whose stream breaks mid-tablet resumes below the last
// row it returned, and one whose tablets moved and split behind its back
// follows them: no row twice, none skipped, the limit kept.
func TestReverseScanResumesBelowTheLastRow(t *testing.T) {
	c := newCluster(t, 3, "g", "p")
	cl := c.client(t)
	tbl := cl.Open("t")
	fill(t, tbl, alphabet())
	ctx := context.Background()
	last, mid := c.serverOf("z"), c.serverOf("h")
	last.mu.Lock()
	last.failAfter = 3
	last.mu.Unlock()
	mid.mu.Lock()
	mid.failAfter = 4
	mid.mu.Unlock()
	if got := keys(t, tbl.ReadRows(ctx, NewRange([]byte("b"), nil), Reverse(), LimitRows(20))); got != "zyxwvutsrqponmlkjihg" {
		t.Fatalf("scan = %q", got)
	}
	// Each resumed stream asked only for rows below the last one
	// returned, and for the rows left of the limit.
	for _, tc := range []struct {
		s     *fakeServer
		below string
		limit int64
	}{{last, "x", 17}, {mid, "l", 5}} {
		tc.s.mu.Lock()
		reads := slices.Clone(tc.s.reads)
		tc.s.mu.Unlock()
		if len(reads) != 2 {
			t.Fatalf("%d reads on a server whose stream broke once, want 2", len(reads))
		}
		rs := reads[1].GetRows()
		for _, r := range rs.GetRowRanges() {
			if len(r.GetEndKey()) == 0 || string(r.GetEndKey()) > tc.below {
				t.Errorf("resumed read asked for [%q, %q), want rows below %q", r.GetStartKey(), r.GetEndKey(), tc.below)
			}
		}
		if len(rs.GetRowKeys()) != 0 || len(rs.GetRowRanges()) != 1 {
			t.Errorf("resumed read asked for %v", rs)
		}
		if reads[1].GetRowsLimit() != tc.limit || !reads[1].GetReversed() {
			t.Errorf("resumed read: limit %d reversed %v, want %d true", reads[1].GetRowsLimit(), reads[1].GetReversed(), tc.limit)
		}
	}

	// Tablets split and moved behind the client's back: the stale
	// locations are refused (not serving), and the scan follows.
	var addrs []string
	for a := range c.servers {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	c.split("k", addrs[0], addrs[1])
	c.split("t", addrs[2], addrs[0])
	c.move("b", addrs[1])
	if got := keys(t, tbl.ReadRows(ctx, nil, Reverse())); got != "zyxwvutsrqponmlkjihgfedcba" {
		t.Errorf("scan after splits and a move = %q", got)
	}
	// The tablet being read splits while its stream breaks after two
	// rows, and the next tablet splits before the scan gets there (its
	// cached location goes stale): the scan resumes below the last row
	// in the children.
	c.serverOf("z").mu.Lock()
	c.serverOf("z").failAfter = 2
	c.serverOf("z").mu.Unlock()
	it := tbl.ReadRows(ctx, nil, Reverse())
	defer it.Close()
	var got []string
	for it.Next() {
		got = append(got, string(it.Row().Key))
		if len(got) == 2 {
			c.split("w", addrs[1], addrs[2]) // tabpR [t, ∞) -> tabpRL [t, w), tabpRR [w, ∞)
			c.split("r", addrs[0], addrs[1]) // tabpL [p, t) -> tabpLL, tabpLR
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if g := strings.Join(got, ""); g != "zyxwvutsrqponmlkjihgfedcba" {
		t.Errorf("scan across splits = %q", g)
	}
	var child []string
	for _, s := range c.servers {
		s.mu.Lock()
		for _, req := range s.reads {
			if req.GetTablet().GetTabletId() == "tabpRR" {
				child = append(child, rowSet(req.GetRows()))
			}
		}
		s.mu.Unlock()
	}
	if fmt.Sprint(child) != "[[w,y)]" {
		t.Errorf("reads of the split child [w, ∞): %q, want one of [w,y)", child)
	}
}

// rowSet renders a proto row set, for messages.
func rowSet(rs *tabulapb.RowSet) string {
	var parts []string
	for _, k := range rs.GetRowKeys() {
		parts = append(parts, string(k))
	}
	for _, r := range rs.GetRowRanges() {
		parts = append(parts, fmt.Sprintf("[%s,%s)", r.GetStartKey(), r.GetEndKey()))
	}
	return strings.Join(parts, " ")
}
