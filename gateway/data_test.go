package gateway_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"cloud.google.com/go/bigtable"
)

// createTable makes a table through the gateway and drops it at the end.
func createTable(t *testing.T, a *bigtable.AdminClient, conf *bigtable.TableConf) *bigtable.TableConf {
	t.Helper()
	ctx := testContext(t)
	if err := a.CreateTableFromConf(ctx, conf); err != nil {
		t.Fatalf("CreateTableFromConf(%s): %v", conf.TableID, err)
	}
	t.Cleanup(func() { a.DeleteTable(context.Background(), conf.TableID) })
	return conf
}

// readAll reads rs with opts and renders each row as
// "key: fam:qual@ts=value ..." lines, the order the client got them in.
func readAll(t *testing.T, tbl *bigtable.Table, rs bigtable.RowSet, opts ...bigtable.ReadOption) []string {
	t.Helper()
	var out []string
	err := tbl.ReadRows(testContext(t), rs, func(r bigtable.Row) bool {
		out = append(out, render(r))
		return true
	}, opts...)
	if err != nil {
		t.Fatalf("ReadRows: %v", err)
	}
	return out
}

func render(r bigtable.Row) string {
	var b strings.Builder
	for _, fam := range sortedFamilies(r) {
		for _, it := range r[fam] {
			if b.Len() == 0 {
				b.WriteString(it.Row + ":")
			}
			fmt.Fprintf(&b, " %s@%d=%s", it.Column, it.Timestamp, it.Value)
			if len(it.Labels) > 0 {
				fmt.Fprintf(&b, "%v", it.Labels)
			}
		}
	}
	return b.String()
}

func sortedFamilies(r bigtable.Row) []string { return slices.Sorted(maps.Keys(r)) }

func apply(t *testing.T, tbl *bigtable.Table, row string, m *bigtable.Mutation) {
	t.Helper()
	if err := tbl.Apply(testContext(t), row, m); err != nil {
		t.Fatalf("Apply(%s): %v", row, err)
	}
}

func set(fam, col string, ts bigtable.Timestamp, v string) *bigtable.Mutation {
	m := bigtable.NewMutation()
	m.Set(fam, col, ts, []byte(v))
	return m
}

func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// TestReadsAndWritesThroughTheOfficialClient: every data RPC through
// cloud.google.com/go/bigtable, with answers checked exactly, on a table
// pre-split so that scans cross tablets.
func TestReadsAndWritesThroughTheOfficialClient(t *testing.T) {
	c, a := bigtableClients(t)
	ctx := testContext(t)
	createTable(t, a, &bigtable.TableConf{TableID: "data", SplitKeys: []string{"b", "d"},
		Families: map[string]bigtable.GCPolicy{"cf": bigtable.NoGcPolicy(), "other": bigtable.NoGcPolicy()}})
	tbl := c.Open("data")

	for _, row := range []string{"a", "b", "c", "d", "e"} {
		m := bigtable.NewMutation()
		m.Set("cf", "q1", 1000, []byte(row+"1"))
		m.Set("cf", "q1", 2000, []byte(row+"2"))
		m.Set("cf", "q2", 1000, []byte(row+"x"))
		m.Set("other", "z", 3000, []byte(row+"z"))
		apply(t, tbl, row, m)
	}

	all := readAll(t, tbl, bigtable.InfiniteRange(""))
	equal(t, "full scan", all, []string{
		"a: cf:q1@2000=a2 cf:q1@1000=a1 cf:q2@1000=ax other:z@3000=az",
		"b: cf:q1@2000=b2 cf:q1@1000=b1 cf:q2@1000=bx other:z@3000=bz",
		"c: cf:q1@2000=c2 cf:q1@1000=c1 cf:q2@1000=cx other:z@3000=cz",
		"d: cf:q1@2000=d2 cf:q1@1000=d1 cf:q2@1000=dx other:z@3000=dz",
		"e: cf:q1@2000=e2 cf:q1@1000=e1 cf:q2@1000=ex other:z@3000=ez",
	})
	equal(t, "range [b,d)", readAll(t, tbl, bigtable.NewRange("b", "d"), bigtable.RowFilter(bigtable.LatestNFilter(1))), []string{
		"b: cf:q1@2000=b2 cf:q2@1000=bx other:z@3000=bz",
		"c: cf:q1@2000=c2 cf:q2@1000=cx other:z@3000=cz",
	})
	equal(t, "closed range [b,c]", readAll(t, tbl, bigtable.NewClosedRange("b", "c"), bigtable.RowFilter(bigtable.FamilyFilter("other"))), []string{
		"b: other:z@3000=bz", "c: other:z@3000=cz",
	})
	equal(t, "open range (a,c)", readAll(t, tbl, bigtable.NewOpenRange("a", "c"), bigtable.RowFilter(bigtable.FamilyFilter("other"))), []string{
		"b: other:z@3000=bz",
	})
	equal(t, "row list and limit", readAll(t, tbl, bigtable.RowList{"e", "a", "c"}, bigtable.LimitRows(2), bigtable.RowFilter(bigtable.ColumnFilter("z"))), []string{
		"a: other:z@3000=az", "c: other:z@3000=cz",
	})
	equal(t, "range list", readAll(t, tbl, bigtable.RowRangeList{bigtable.NewRange("a", "b"), bigtable.InfiniteRange("e")}, bigtable.RowFilter(bigtable.ColumnFilter("z"))), []string{
		"a: other:z@3000=az", "e: other:z@3000=ez",
	})
	equal(t, "prefix", readAll(t, tbl, bigtable.PrefixRange("d"), bigtable.RowFilter(bigtable.ValueFilter("d."))), []string{
		"d: cf:q1@2000=d2 cf:q1@1000=d1 cf:q2@1000=dx other:z@3000=dz",
	})

	// Single row reads, present and absent.
	r, err := tbl.ReadRow(ctx, "c", bigtable.RowFilter(bigtable.ChainFilters(bigtable.FamilyFilter("cf"), bigtable.CellsPerRowLimitFilter(2))))
	if err != nil || render(r) != "c: cf:q1@2000=c2 cf:q1@1000=c1" {
		t.Errorf("ReadRow(c) = %q, %v", render(r), err)
	}
	if r, err := tbl.ReadRow(ctx, "nope"); err != nil || len(r) != 0 {
		t.Errorf("ReadRow(nope) = %v, %v; want an empty row", r, err)
	}

	// Deletes of a column's time range, a family, a row.
	m := bigtable.NewMutation()
	m.DeleteTimestampRange("cf", "q1", 1000, 2000)
	apply(t, tbl, "a", m)
	m = bigtable.NewMutation()
	m.DeleteCellsInFamily("cf")
	apply(t, tbl, "b", m)
	m = bigtable.NewMutation()
	m.DeleteRow()
	apply(t, tbl, "c", m)
	m = bigtable.NewMutation()
	m.DeleteCellsInColumn("other", "z")
	apply(t, tbl, "d", m)
	equal(t, "after deletes", readAll(t, tbl, bigtable.NewRange("a", "e")), []string{
		"a: cf:q1@2000=a2 cf:q2@1000=ax other:z@3000=az",
		"b: other:z@3000=bz",
		"d: cf:q1@2000=d2 cf:q1@1000=d1 cf:q2@1000=dx",
	})

	// ApplyBulk: per-entry status, one bad entry fails alone.
	bad := bigtable.NewMutation()
	bad.Set("nofamily", "q", 1000, []byte("x"))
	errs, err := tbl.ApplyBulk(ctx, []string{"k1", "k2", "k3"}, []*bigtable.Mutation{set("cf", "q", 1000, "v1"), bad, set("cf", "q", 1000, "v3")})
	if err != nil || len(errs) != 3 || errs[0] != nil || errs[1] == nil || errs[2] != nil {
		t.Fatalf("ApplyBulk = %v, %v; want only entry 1 to fail", errs, err)
	}
	if !strings.Contains(errs[1].Error(), "nofamily") {
		t.Errorf("ApplyBulk entry 1 error %q does not name the family", errs[1])
	}
	equal(t, "bulk rows", readAll(t, tbl, bigtable.PrefixRange("k")), []string{"k1: cf:q@1000=v1", "k3: cf:q@1000=v3"})

	// CheckAndMutate both ways.
	var matched bool
	cond := bigtable.NewCondMutation(bigtable.ValueFilter("v1"), set("cf", "hit", 1000, "yes"), set("cf", "miss", 1000, "yes"))
	if err := tbl.Apply(ctx, "k1", cond, bigtable.GetCondMutationResult(&matched)); err != nil || !matched {
		t.Errorf("CheckAndMutate(k1) matched=%v err=%v, want matched", matched, err)
	}
	cond = bigtable.NewCondMutation(bigtable.ValueFilter("v1"), set("cf", "hit", 1000, "yes"), set("cf", "miss", 1000, "yes"))
	if err := tbl.Apply(ctx, "k3", cond, bigtable.GetCondMutationResult(&matched)); err != nil || matched {
		t.Errorf("CheckAndMutate(k3) matched=%v err=%v, want not matched", matched, err)
	}
	equal(t, "after check-and-mutate", readAll(t, tbl, bigtable.PrefixRange("k"), bigtable.RowFilter(bigtable.ColumnFilter("hit|miss"))),
		[]string{"k1: cf:hit@1000=yes", "k3: cf:miss@1000=yes"})

	// ReadModifyWrite: increment and append, answering the new cells.
	rmw := bigtable.NewReadModifyWrite()
	rmw.Increment("cf", "n", 5)
	rmw.AppendValue("cf", "s", []byte("ab"))
	r, err = tbl.ApplyReadModifyWrite(ctx, "counter", rmw)
	if err != nil {
		t.Fatal(err)
	}
	rmw = bigtable.NewReadModifyWrite()
	rmw.Increment("cf", "n", -7)
	rmw.AppendValue("cf", "s", []byte("cd"))
	if r, err = tbl.ApplyReadModifyWrite(ctx, "counter", rmw); err != nil {
		t.Fatal(err)
	}
	if got := r["cf"]; len(got) != 2 || int64(binary.BigEndian.Uint64(got[0].Value)) != -2 || string(got[1].Value) != "abcd" {
		t.Errorf("ReadModifyWrite answered %v, want n=-2, s=abcd", r)
	}

	// SampleRowKeys: keys in order (the client drops the final empty
	// key; TestRawProtocol checks it is sent).
	keys, err := tbl.SampleRowKeys(ctx)
	if err != nil || len(keys) == 0 || !slices.IsSorted(keys) {
		t.Errorf("SampleRowKeys = %q, %v; want sorted keys", keys, err)
	}
}

// TestReversedScansCrossTablets reads a table of four tablets backwards.
func TestReversedScansCrossTablets(t *testing.T) {
	c, a := bigtableClients(t)
	createTable(t, a, &bigtable.TableConf{TableID: "reversed", SplitKeys: []string{"r03", "r06", "r09"},
		Families: map[string]bigtable.GCPolicy{"cf": bigtable.NoGcPolicy()}})
	tbl := c.Open("reversed")
	var want []string
	for i := 11; i >= 0; i-- {
		row := fmt.Sprintf("r%02d", i)
		apply(t, tbl, row, set("cf", "q", 1000, row))
		want = append(want, row+": cf:q@1000="+row)
	}
	equal(t, "reversed full scan", readAll(t, tbl, bigtable.InfiniteRange(""), bigtable.ReverseScan()), want)
	equal(t, "reversed range with limit", readAll(t, tbl, bigtable.NewRange("r02", "r08"), bigtable.ReverseScan(), bigtable.LimitRows(4)), want[4:8])
}

// TestLargeCellsRoundTrip writes a 10 MiB value and reads it back: the
// gateway sends it across several chunks.
func TestLargeCellsRoundTrip(t *testing.T) {
	_, a := bigtableClients(t)
	c := bigClient(t)
	createTable(t, a, &bigtable.TableConf{TableID: "large", Families: map[string]bigtable.GCPolicy{"cf": bigtable.NoGcPolicy()}})
	tbl := c.Open("large")
	big := bytes.Repeat([]byte("0123456789abcdef"), 10<<20/16)
	big[12345] = 'X'
	m := bigtable.NewMutation()
	m.Set("cf", "big", 1000, big)
	m.Set("cf", "small", 1000, []byte("s"))
	apply(t, tbl, "row", m)
	apply(t, tbl, "row2", set("cf", "after", 1000, "a"))
	var got []bigtable.Row
	if err := tbl.ReadRows(testContext(t), bigtable.InfiniteRange(""), func(r bigtable.Row) bool { got = append(got, r); return true }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got[0]["cf"]) != 2 || !bytes.Equal(got[0]["cf"][0].Value, big) || string(got[0]["cf"][1].Value) != "s" {
		t.Fatalf("read back %d rows; the big value did not round-trip", len(got))
	}
	if render(got[1]) != "row2: cf:after@1000=a" {
		t.Errorf("row after the big one: %q", render(got[1]))
	}
}
