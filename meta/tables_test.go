package meta

import (
	"context"
	"errors"
	"testing"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// leader puts an election key and returns the guard of its term.
func leader(t *testing.T, s Store, key string) Guard {
	t.Helper()
	resp, err := s.Put(context.Background(), key, "addr")
	if err != nil {
		t.Fatal(err)
	}
	return LeaderGuard(key, resp.Header.Revision)
}

func TestTableTransactionsAreGuardedByTheTermAndTheRevision(t *testing.T) {
	cli := newTwin(t)
	ctx := context.Background()
	l := NewLayout("test")
	term := leader(t, cli, l.ElectionPrefix()+"m1")
	schema := TableRecord{Schema: &tabulapb.TableSchema{Name: "users", Families: []*tabulapb.Family{{Name: "cf"}}}}
	tablets := []TabletRecord{
		{Table: "users", ID: "b2", Start: []byte("m"), State: StateUnassigned, Fresh: true},
		{Table: "users", ID: "a1", End: []byte("m"), State: StateUnassigned, Fresh: true},
	}
	if err := CreateTable(ctx, cli, l, schema, tablets, term); err != nil {
		t.Fatal(err)
	}
	if err := CreateTable(ctx, cli, l, schema, tablets[:1], term); !errors.Is(err, ErrConflict) {
		t.Fatalf("creating an existing table: %v, want ErrConflict", err)
	}
	rec, got, err := GetTableAndTablets(ctx, cli, l, "users")
	if err != nil || rec.Schema.GetName() != "users" || len(got) != 2 || got[0].ID != "a1" || got[1].ID != "b2" || !got[0].Fresh {
		t.Fatalf("GetTableAndTablets = %v, %+v, %v; want the schema and both tablets by start key", rec.Schema, got, err)
	}
	if _, _, err := GetTableAndTablets(ctx, cli, l, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetTableAndTablets of a missing table: %v, want ErrNotFound", err)
	}

	_, rev, err := GetTable(ctx, cli, l, "users")
	if err != nil {
		t.Fatal(err)
	}
	schema.Schema.BalancerDisabled = true
	next, err := PutTable(ctx, cli, l, schema, rev, term)
	if err != nil || next <= rev {
		t.Fatalf("PutTable = %d, %v; want a revision above %d", next, err, rev)
	}
	if _, err := PutTable(ctx, cli, l, schema, rev, term); !errors.Is(err, ErrConflict) {
		t.Fatalf("PutTable at a stale revision: %v, want ErrConflict", err)
	}
	tables, bad, err := ListTables(ctx, cli, l)
	if err != nil || len(bad) != 0 || len(tables) != 1 || !tables[0].Schema.GetBalancerDisabled() {
		t.Fatalf("ListTables = %v, %v, %v", tables, bad, err)
	}

	// The term ends: every guarded call refuses, and changes nothing.
	if _, err := cli.Delete(ctx, l.ElectionPrefix()+"m1"); err != nil {
		t.Fatal(err)
	}
	if err := CheckGuard(ctx, cli, term); !errors.Is(err, ErrConflict) {
		t.Fatalf("CheckGuard after the term: %v, want ErrConflict", err)
	}
	if err := SetBalancer(ctx, cli, l, false, term); !errors.Is(err, ErrConflict) {
		t.Fatalf("SetBalancer after the term: %v, want ErrConflict", err)
	}
	if _, err := ReadGCKeys(ctx, cli, l, term); !errors.Is(err, ErrConflict) {
		t.Fatalf("ReadGCKeys after the term: %v, want ErrConflict", err)
	}
	if err := DeleteTable(ctx, cli, l, "users", next, term); !errors.Is(err, ErrConflict) {
		t.Fatalf("DeleteTable after the term: %v, want ErrConflict", err)
	}
	if on, err := BalancerOn(ctx, cli, l); err != nil || !on {
		t.Fatalf("BalancerOn = %v, %v; want on (absent)", on, err)
	}

	next2 := leader(t, cli, l.ElectionPrefix()+"m2")
	if err := CheckGuard(ctx, cli, next2); err != nil {
		t.Fatal(err)
	}
	if err := SetBalancer(ctx, cli, l, false, next2); err != nil {
		t.Fatal(err)
	}
	if on, err := BalancerOn(ctx, cli, l); err != nil || on {
		t.Fatalf("BalancerOn = %v, %v; want off", on, err)
	}
	s1 := register(t, cli, l, "s1", "addr1")
	keys, err := ReadGCKeys(ctx, cli, l, next2)
	if err != nil || len(keys.TableKeys) != 1 || len(keys.TabletKeys) != 2 || len(keys.ServerLeases) != 1 || keys.ServerLeases[0] != s1.Lease {
		t.Fatalf("ReadGCKeys = %+v, %v", keys, err)
	}
	if err := DeleteTable(ctx, cli, l, "users", next, next2); err != nil {
		t.Fatal(err)
	}
	if _, _, err := GetTableAndTablets(ctx, cli, l, "users"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after DeleteTable: %v, want ErrNotFound", err)
	}
	if ts, _, err := GetTablets(ctx, cli, l, "users"); err != nil || len(ts) != 0 {
		t.Fatalf("after DeleteTable the tablets are %+v, %v; want none", ts, err)
	}
	if addr, err := LeaderAddress(ctx, cli, l); err != nil || addr != "addr" {
		t.Fatalf("LeaderAddress = %q, %v", addr, err)
	}
}

func TestReadClusterSkipsWhatDoesNotDecode(t *testing.T) {
	cli := newTwin(t)
	ctx := context.Background()
	l := NewLayout("test")
	register(t, cli, l, "s1", "addr1")
	putTablet(t, cli, l, TabletRecord{Table: "b", ID: "x", State: StateUnassigned})
	putTablet(t, cli, l, TabletRecord{Table: "a", ID: "y", Start: []byte("k"), State: StateUnassigned})
	putTablet(t, cli, l, TabletRecord{Table: "a", ID: "z", End: []byte("k"), State: StateUnassigned})
	for _, k := range []string{l.ServerKey("s2"), l.TableKey("t"), l.TabletKey("a", "bad")} {
		if _, err := cli.Put(ctx, k, "not json"); err != nil {
			t.Fatal(err)
		}
	}
	c, err := ReadCluster(ctx, cli, l)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Servers) != 1 || len(c.Tables) != 0 || len(c.Tablets) != 3 || c.Rev == 0 {
		t.Fatalf("ReadCluster = %+v", c)
	}
	if c.Tablets[0].ID != "z" || c.Tablets[1].ID != "y" || c.Tablets[2].ID != "x" {
		t.Errorf("tablets %s %s %s; want by table, then start key", c.Tablets[0].ID, c.Tablets[1].ID, c.Tablets[2].ID)
	}
	want := []string{"server", "table", "tablet"}
	if len(c.Bad) != 3 {
		t.Fatalf("Bad = %+v; want three", c.Bad)
	}
	for i, b := range c.Bad {
		if b.Kind != want[i] || !errors.Is(b.Err, ErrCorrupt) {
			t.Errorf("Bad[%d] = %+v; want a corrupt %s", i, b, want[i])
		}
	}
	all, bad, err := ListAllTablets(ctx, cli, l)
	if err != nil || len(all) != 3 || len(bad) != 1 || all[0].ID != "y" {
		t.Fatalf("ListAllTablets = %+v, %+v, %v; want three in key order and one bad", all, bad, err)
	}
}

func TestTableMapReadsInPagesAndWatchesTypedChanges(t *testing.T) {
	cli := newTwin(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := NewLayout("test")
	schema := TableRecord{Schema: &tabulapb.TableSchema{Name: "t"}}
	if _, err := cli.Put(ctx, l.TableKey("t"), EncodeTable(schema)); err != nil {
		t.Fatal(err)
	}
	// A record naming another tablet: the key wins.
	putTablet(t, cli, l, TabletRecord{Table: "other", ID: "zz", State: StateUnassigned})
	if _, err := cli.Put(ctx, l.TabletKey("t", "a1"), EncodeTablet(TabletRecord{Table: "other", ID: "zz", State: StateUnassigned})); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, l.TabletKey("t", "bad"), "not json"); err != nil {
		t.Fatal(err)
	}
	var got []MapEntry
	rev, err := ReadTableMap(ctx, cli, l, 1, func(e MapEntry) { got = append(got, e) })
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("read %d entries, want 4: %+v", len(got), got)
	}
	if e := got[0]; e.Kind != MapTable || e.Name != "t" || e.Err != nil || e.Table.Schema.GetName() != "t" {
		t.Errorf("first entry %+v; want table t", e)
	}
	if e := got[1]; e.Kind != MapTablet || e.Name != "other" || e.ID != "zz" || e.Err != nil {
		t.Errorf("second entry %+v; want tablet other/zz", e)
	}
	if e := got[2]; e.Kind != MapTablet || e.Tablet.Table != "t" || e.Tablet.ID != "a1" || e.Tablet.ModRevision != e.ModRevision {
		t.Errorf("third entry %+v; want tablet t/a1 named by its key", e)
	}
	if e := got[3]; e.Kind != MapTablet || e.ID != "bad" || !errors.Is(e.Err, ErrCorrupt) {
		t.Errorf("fourth entry %+v; want a corrupt t/bad", e)
	}

	mw := NewMapWatcher(cli, l)
	defer mw.Close()
	if _, err := cli.Delete(ctx, l.TabletKey("t", "a1")); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, l.ServerKey("s1"), "outside the map"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(ctx, l.TableKey("t")); err != nil {
		t.Fatal(err)
	}
	var changes []MapEntry
	for c := range mw.Watch(ctx, rev+1) {
		if c.Err != nil {
			t.Fatal(c.Err)
		}
		changes = append(changes, c.Entries...)
		if len(changes) >= 2 {
			break
		}
	}
	if e := changes[0]; !e.Deleted || e.Kind != MapTablet || e.Name != "t" || e.ID != "a1" {
		t.Errorf("first change %+v; want the delete of t/a1", e)
	}
	if e := changes[1]; !e.Deleted || e.Kind != MapTable || e.Name != "t" || e.ModRevision <= changes[0].ModRevision {
		t.Errorf("second change %+v; want the delete of table t, later", e)
	}
	if err := mw.RequestProgress(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := Revision(ctx, cli, l); err != nil || r != changes[1].ModRevision {
		t.Fatalf("Revision = %d, %v; want %d", r, err, changes[1].ModRevision)
	}
	if err := Probe(ctx, cli, l); err != nil {
		t.Fatal(err)
	}
}
