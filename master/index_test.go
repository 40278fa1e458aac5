package master

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tabuladb/tabula/meta"
)

// startIndex runs a tablet index with a small page size until the test
// ends.
func (c *cluster) startIndex(pageSize int) *tabletIndex {
	c.t.Helper()
	x := newTabletIndex(c.cli, c.layout, testLogger(c.t), pageSize)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		x.run(ctx)
	}()
	c.t.Cleanup(func() { cancel(); wg.Wait() })
	return x
}

// put writes one key and returns the revision of the write.
func (c *cluster) put(key, value string) int64 {
	c.t.Helper()
	resp, err := c.cli.Put(context.Background(), key, value)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp.Header.Revision
}

// tabletAt is a tablet record of table t over [start, end), held by s1.
func tabletAt(table, id, start, end string) meta.TabletRecord {
	r := meta.TabletRecord{Table: table, ID: id, State: meta.StateAssigned, Server: "s1", Address: "127.0.0.1:1", Epoch: 1}
	if start != "" {
		r.Start = []byte(start)
	}
	if end != "" {
		r.End = []byte(end)
	}
	return r
}

func wantLocate(t *testing.T, x *tabletIndex, table, row, id string) {
	t.Helper()
	got := x.locate(table, []byte(row))
	switch {
	case id == "" && got != nil:
		t.Fatalf("locate(%s, %q) = %s, want none", table, row, got.ID)
	case id != "" && (got == nil || got.ID != id):
		t.Fatalf("locate(%s, %q) = %v, want %s", table, row, got, id)
	case got != nil && !got.Contains([]byte(row)):
		t.Fatalf("locate(%s, %q) = %s [%q, %q), which does not hold the row", table, row, got.ID, got.Start, got.End)
	}
}

func mustSync(t *testing.T, x *tabletIndex) {
	t.Helper()
	if !x.sync(context.Background()) {
		t.Fatal("index did not catch up with etcd")
	}
}

func TestIndexBuildFollowRebuild(t *testing.T) {
	c := newCluster(t)
	l := c.layout
	// 10 tablets + 1 table record: four pages of 3.
	bounds := []string{"", "b", "d", "f", "h", "j", "l", "n", "p", "r", ""}
	c.put(l.TableKey("t"), meta.EncodeTable(meta.TableRecord{Schema: schema("t", "cf")}))
	var last int64
	for i := 0; i+1 < len(bounds); i++ {
		// Ids in the reverse of key order, so that key order is not etcd's.
		id := fmt.Sprintf("id%02d", 20-i)
		last = c.put(l.TabletKey("t", id), meta.EncodeTablet(tabletAt("t", id, bounds[i], bounds[i+1])))
	}
	// A key outside the span must not confuse the index.
	lease, err := c.cli.Grant(context.Background(), 60)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.cli.Put(context.Background(), l.ServerKey("s1"), meta.EncodeServer(meta.ServerRecord{ID: "s1", Address: "127.0.0.1:1", Lease: int64(lease.ID)}), clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}

	x := c.startIndex(3)
	waitFor(t, 5*time.Second, func() (bool, string) { return x.Rev() >= last, fmt.Sprint("rev ", x.Rev()) })
	_, ts, ok := x.table("t")
	if !ok || len(ts) != 10 {
		t.Fatalf("index holds %d tablets (ok %v), want 10", len(ts), ok)
	}
	for i := range ts {
		if string(ts[i].Start) != bounds[i] {
			t.Fatalf("tablet %d starts at %q, want %q", i, ts[i].Start, bounds[i])
		}
	}
	wantLocate(t, x, "t", "", "id20")
	wantLocate(t, x, "t", "c", "id19")
	wantLocate(t, x, "t", "d", "id18")
	wantLocate(t, x, "t", "zzz", "id11")
	wantLocate(t, x, "nope", "a", "")
	if got, ok := x.overlapping("t", []byte("c"), []byte("g"), 0); !ok || len(got) != 3 || got[0].ID != "id19" || got[2].ID != "id17" {
		t.Fatalf("overlapping [c,g) = %v %v", got, ok)
	}
	if got, _ := x.overlapping("t", []byte("c"), nil, 2); len(got) != 2 {
		t.Fatalf("overlapping [c,) limit 2 = %d tablets", len(got))
	}

	// A split arrives through the watch as one revision.
	parent, err := meta.GetTablet(context.Background(), c.cli, l, "t", "id18")
	if err != nil {
		t.Fatal(err)
	}
	left, right := tabletAt("t", "L", "d", "e"), tabletAt("t", "R", "e", "f")
	left.Lease, right.Lease = int64(lease.ID), int64(lease.ID)
	if err := meta.CommitSplit(context.Background(), c.cli, l, parent.ModRevision, parent.TabletRecord, left, right); err != nil {
		t.Fatal(err)
	}
	mustSync(t, x)
	wantLocate(t, x, "t", "d", "L")
	wantLocate(t, x, "t", "dzz", "L")
	wantLocate(t, x, "t", "e", "R")
	if _, ts, _ := x.table("t"); len(ts) != 11 {
		t.Fatalf("after the split the index holds %d tablets, want 11", len(ts))
	}

	// A write outside the span moves etcd's revision; sync still returns
	// (by a progress notification).
	rev := c.put(l.ServerKey("s2"), meta.EncodeServer(meta.ServerRecord{ID: "s2", Address: "127.0.0.1:2"}))
	mustSync(t, x)
	if x.Rev() < rev {
		t.Fatalf("index rev %d after sync, want >= %d", x.Rev(), rev)
	}

	// Deleting the table and its tablets empties the index of it.
	if _, err := c.cli.Delete(context.Background(), l.TabletsPrefix("t"), clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.cli.Delete(context.Background(), l.TableKey("t")); err != nil {
		t.Fatal(err)
	}
	mustSync(t, x)
	if _, _, ok := x.table("t"); ok {
		t.Fatal("deleted table still in the index")
	}
	wantLocate(t, x, "t", "d", "")

	// A cancelled watch makes the index rebuild, and it keeps following.
	builds := x.buildCount()
	x.cancelWatch()
	waitFor(t, 5*time.Second, func() (bool, string) { return x.buildCount() > builds, "no rebuild" })
	c.put(l.TableKey("u"), meta.EncodeTable(meta.TableRecord{Schema: schema("u", "cf")}))
	c.put(l.TabletKey("u", "only"), meta.EncodeTablet(tabletAt("u", "only", "", "")))
	mustSync(t, x)
	wantLocate(t, x, "u", "anything", "only")
	if s, ok := x.schemaList(); !ok || len(s) != 1 || s[0].Name != "u" {
		t.Fatalf("schemas after rebuild: %v %v", s, ok)
	}
}
