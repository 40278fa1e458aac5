package gateway_test

import (
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"cloud.google.com/go/bigtable"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/internal/testkit"
	"github.com/tabuladb/tabula/internal/testkit/writers"
)

// tabulaClient is Tabula's own client on the test cluster, for what the
// Bigtable API has no call for (compactions).
func tabulaClient(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.NewClient(testContext(t), cluster.MasterAddr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestNestedGCRulesOnReadAndAfterCompaction: a nested rule hides what it
// condemns at once, and a major compaction removes it for good.
func TestNestedGCRulesOnReadAndAfterCompaction(t *testing.T) {
	c, a := bigtableClients(t)
	ctx := testContext(t)
	// At most 3 versions, and of those only the newest once older than 1h.
	rule := bigtable.UnionPolicy(bigtable.MaxVersionsPolicy(3),
		bigtable.IntersectionPolicy(bigtable.MaxAgePolicy(time.Hour), bigtable.MaxVersionsPolicy(1)))
	createTable(t, a, &bigtable.TableConf{TableID: "gcrules", Families: map[string]bigtable.GCPolicy{"cf": rule}})
	if got := familyPolicies(t, a, "gcrules")["cf"]; got != "(versions() > 3 || (age() > 1h && versions() > 1))" {
		t.Errorf("GC policy read back as %q", got)
	}
	tbl := c.Open("gcrules")
	now := bigtable.Now().TruncateToMilliseconds()
	m := bigtable.NewMutation()
	for _, ago := range []time.Duration{10 * time.Minute, 2 * time.Hour, 3 * time.Hour, 4 * time.Hour} {
		m.Set("cf", "q", now-bigtable.Timestamp(ago.Microseconds()), []byte(ago.String()))
	}
	m.Set("cf", "fresh", now, []byte("a"))
	m.Set("cf", "fresh", now-1000, []byte("b"))
	apply(t, tbl, "row", m)
	versions := func() int {
		r, err := tbl.ReadRow(ctx, "row")
		if err != nil {
			t.Fatal(err)
		}
		return len(r["cf"])
	}
	if n := versions(); n != 3 {
		t.Errorf("with the rule: %d cells, want 3 (q: the 10m one; fresh: both)", n)
	}
	if err := a.SetGCPolicy(ctx, "gcrules", "cf", bigtable.NoGcPolicy()); err != nil {
		t.Fatal(err)
	}
	if n := versions(); n != 6 {
		t.Errorf("rule removed before any compaction: %d cells, want all 6 back", n)
	}
	if err := a.SetGCPolicy(ctx, "gcrules", "cf", rule); err != nil {
		t.Fatal(err)
	}
	if err := tabulaClient(t).Admin().CompactTable(ctx, "gcrules", true); err != nil {
		t.Fatal(err)
	}
	if err := a.SetGCPolicy(ctx, "gcrules", "cf", bigtable.NoGcPolicy()); err != nil {
		t.Fatal(err)
	}
	if n := versions(); n != 3 {
		t.Errorf("rule removed after a major compaction: %d cells, want the 3 the rule kept", n)
	}
}

// TestAggregateFamilies: AddToCell and MergeToCell on sum, min and max
// families, merged into one cell per column and timestamp.
func TestAggregateFamilies(t *testing.T) {
	c, a := bigtableClients(t)
	ctx := testContext(t)
	agg := func(ag bigtable.Aggregator) bigtable.Family {
		return bigtable.Family{GCPolicy: bigtable.NoGcPolicy(), ValueType: bigtable.AggregateType{Input: bigtable.Int64Type{}, Aggregator: ag}}
	}
	createTable(t, a, &bigtable.TableConf{TableID: "aggregates", ColumnFamilies: map[string]bigtable.Family{
		"sum": agg(bigtable.SumAggregator{}), "min": agg(bigtable.MinAggregator{}), "max": agg(bigtable.MaxAggregator{}),
		"raw": {GCPolicy: bigtable.NoGcPolicy()},
	}})
	info, err := a.TableInfo(ctx, "aggregates")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range info.FamilyInfos {
		_, isAgg := f.ValueType.(bigtable.AggregateType)
		if isAgg != (f.Name != "raw") {
			t.Errorf("family %s: value type %#v", f.Name, f.ValueType)
		}
	}
	tbl := c.Open("aggregates")
	for _, v := range []int64{5, -2, 40} {
		m := bigtable.NewMutation()
		for _, fam := range []string{"sum", "min", "max"} {
			m.AddIntToCell(fam, "n", 1000, v)
		}
		apply(t, tbl, "row", m)
	}
	m := bigtable.NewMutation()
	var state [8]byte
	binary.BigEndian.PutUint64(state[:], 100)
	m.MergeBytesToCell("sum", "n", 1000, state[:])
	m.AddIntToCell("sum", "n", 2000, 7) // another timestamp: another cell
	apply(t, tbl, "row", m)
	r, err := tbl.ReadRow(ctx, "row")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]int64{"max": {40}, "min": {-2}, "sum": {7, 143}}
	for fam, vals := range want {
		if len(r[fam]) != len(vals) {
			t.Errorf("family %s: %d cells, want %d", fam, len(r[fam]), len(vals))
			continue
		}
		for i, v := range vals {
			if got := int64(binary.BigEndian.Uint64(r[fam][i].Value)); got != v {
				t.Errorf("family %s cell %d: %d, want %d", fam, i, got, v)
			}
		}
	}
	bad := bigtable.NewMutation()
	bad.Set("sum", "n", 1000, []byte("x"))
	err = tbl.Apply(ctx, "row", bad)
	testkit.WantCode(t, "SetCell into a sum family", err, 3 /* InvalidArgument */, "aggregate")
	bad = bigtable.NewMutation()
	bad.AddIntToCell("raw", "n", 1000, 1)
	err = tbl.Apply(ctx, "row", bad)
	testkit.WantCode(t, "AddToCell into a bytes family", err, 3, "raw")
}

// TestDropRowRangeWhileWritersRun: rows of a prefix acknowledged before the
// drop began are gone after it returns, rows written after it are there,
// other rows are untouched; then DropAllRows empties the table and keeps
// its schema.
func TestDropRowRangeWhileWritersRun(t *testing.T) {
	c, a := bigtableClients(t)
	ctx := testContext(t)
	createTable(t, a, &bigtable.TableConf{TableID: "drops", SplitKeys: []string{"doom/5", "keep/", "zz"},
		Families: map[string]bigtable.GCPolicy{"cf": bigtable.NoGcPolicy()}})
	tbl := c.Open("drops")
	for i := 0; i < 50; i++ {
		apply(t, tbl, fmt.Sprintf("keep/%02d", i), set("cf", "q", 1000, "k"))
	}
	// phase: 0 before the drop is called, 1 while it runs, 2 after it
	// returned. A write both started and acknowledged in phase 0 must be
	// gone; one started in phase 2 must be there.
	var phase atomic.Int32
	type write struct {
		row        string
		start, ack int32
	}
	var mu sync.Mutex
	var writes []write
	ws := writers.Start(t, 4, func(w *writers.Writer, i int) bool {
		row := fmt.Sprintf("doom/%d/%04d", w.N, i)
		start := phase.Load()
		if err := tbl.Apply(ctx, row, set("cf", "q", 1000, "d")); err != nil {
			t.Errorf("writing %s: %v", row, err)
			return false
		}
		mu.Lock()
		writes = append(writes, write{row, start, phase.Load()})
		mu.Unlock()
		return true
	})
	waitWrites := func(n int) {
		for {
			mu.Lock()
			got := len(writes)
			mu.Unlock()
			if got >= n || t.Failed() {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitWrites(100)
	phase.Store(1)
	if err := a.DropRowRange(ctx, "drops", "doom/"); err != nil {
		t.Fatal(err)
	}
	phase.Store(2)
	mu.Lock()
	before := len(writes)
	mu.Unlock()
	waitWrites(before + 100)
	ws.Stop()

	present := map[string]bool{}
	for _, r := range readAll(t, tbl, bigtable.InfiniteRange("")) {
		present[strings.SplitN(r, ":", 2)[0]] = true
	}
	var gone, kept int
	for _, w := range writes {
		switch {
		case w.ack == 0 && present[w.row]:
			t.Errorf("%s, acknowledged before the drop began, is still there", w.row)
		case w.start == 2 && !present[w.row]:
			t.Errorf("%s, written after the drop returned, is missing", w.row)
		case w.ack == 0:
			gone++
		case w.start == 2:
			kept++
		}
	}
	for i := 0; i < 50; i++ {
		if !present[fmt.Sprintf("keep/%02d", i)] {
			t.Errorf("keep/%02d, outside the prefix, is missing", i)
		}
	}
	t.Logf("%d writes: %d acknowledged before the drop and gone, %d after and kept", len(writes), gone, kept)

	if err := a.DropAllRows(ctx, "drops"); err != nil {
		t.Fatal(err)
	}
	if rows := readAll(t, tbl, bigtable.InfiniteRange("")); len(rows) != 0 {
		t.Errorf("DropAllRows left %d rows", len(rows))
	}
	if got := familyPolicies(t, a, "drops"); len(got) != 1 {
		t.Errorf("DropAllRows changed the schema: %v", got)
	}
	apply(t, tbl, "after", set("cf", "q", 1000, "a"))
	testkit.WantCode(t, "an empty prefix", a.DropRowRange(ctx, "drops", ""), codes.InvalidArgument, "row_key_prefix")
}
