package locator

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/tabuladb/tabula/internal/testkit/fakemaster"
)

var seedFlag = flag.Int64("seed", 0, "seed for randomized tests (0: time)")

// TestCacheStaysSortedAndDisjoint inserts tablets of random split
// generations (as splits and merges over time would produce, in any
// order) and checks after each insert that the cache is sorted, never
// overlaps, and answers the newest insert for each of its rows.
func TestCacheStaysSortedAndDisjoint(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (replay with -seed %d)", seed, seed)
	r := rand.New(rand.NewSource(seed))
	keys := []string{"", "b", "d", "f", "h", "j", "l", "n"}
	c := newCache()
	for i := 0; i < 3000; i++ {
		a, b := r.Intn(len(keys)), r.Intn(len(keys))
		if a > b {
			a, b = b, a
		}
		tab := Tablet{Table: "t", ID: fmt.Sprint(i), Start: []byte(keys[a]), Address: "s", State: "assigned"}
		if b > a {
			tab.End = []byte(keys[b])
		} // else: to the end of the table
		if r.Intn(10) == 0 {
			tab.Address, tab.State = "", "unassigned"
		}
		c.insert(tab)
		ts := c.tables["t"]
		for j := 1; j < len(ts); j++ {
			if bytes.Compare(ts[j-1].Start, ts[j].Start) >= 0 || ts[j-1].overlaps(ts[j]) {
				t.Fatalf("insert %d: cache out of order or overlapping: %+v", i, ts)
			}
		}
		for _, row := range []string{"a", "b", "c", "g", "m", "z"} {
			got, ok := c.lookup("t", []byte(row))
			if tab.Contains([]byte(row)) {
				if ok != tab.Assigned() || (ok && got.ID != tab.ID) {
					t.Fatalf("insert %d: lookup(%s) = %+v, %v; want the new tablet %+v", i, row, got, ok, tab)
				}
			} else if ok && !got.Contains([]byte(row)) {
				t.Fatalf("insert %d: lookup(%s) = %+v does not contain it", i, row, got)
			}
		}
	}
	if !sort.SliceIsSorted(c.tables["t"], func(i, j int) bool {
		return bytes.Compare(c.tables["t"][i].Start, c.tables["t"][j].Start) < 0
	}) {
		t.Fatal("cache not sorted")
	}
}

func TestLocateRangeStopsAtUnassignedTablet(t *testing.T) {
	m := fakemaster.Start(t)
	m.SetTablets("t", tablet("a", "", "g", "s1:1", 1), tablet("b", "g", "p", "", 0), tablet("c", "p", "", "s1:1", 1))
	l, err := New([]string{m.Addr()}, Options{Attempts: 2, Backoff: Backoff{Initial: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	ts, err := l.LocateRange(ctx, "t", nil, nil)
	if !errors.Is(err, ErrUnassigned) {
		t.Fatalf("LocateRange over an unassigned tablet: %v", err)
	}
	if len(ts) != 1 || ts[0].ID != "a" {
		t.Errorf("partial answer %+v, want it to start with tablet a", ts)
	}
	// The empty row is the table's first tablet.
	first, err := l.Locate(ctx, "t", nil)
	if err != nil || first.ID != "a" {
		t.Errorf("Locate(empty row) = %+v, %v", first, err)
	}
	ts, err = l.LocateRange(ctx, "t", []byte("q"), nil)
	if err != nil || len(ts) != 1 || ts[0].ID != "c" {
		t.Errorf("LocateRange [q, end) = %+v, %v", ts, err)
	}
}
