package gateway_test

import (
	"encoding/binary"
	"testing"
	"time"

	"cloud.google.com/go/bigtable"

	"github.com/tabuladb/tabula/client"
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
	wantCode(t, "SetCell into a sum family", err, 3 /* InvalidArgument */, "aggregate")
	bad = bigtable.NewMutation()
	bad.AddIntToCell("raw", "n", 1000, 1)
	err = tbl.Apply(ctx, "row", bad)
	wantCode(t, "AddToCell into a bytes family", err, 3, "raw")
}
