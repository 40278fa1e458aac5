package devcluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/internal/seaweed/seaweedtest"
)

// readTable reads table whole through the client (row → value of family
// cf, the newest cell), retrying while its tablets are being placed.
func readTable(ctx context.Context, t *testing.T, c *client.Client, table string) map[string]string {
	t.Helper()
	for {
		got := map[string]string{}
		it := c.Open(table).ReadRows(ctx, client.InfiniteRange(nil))
		for it.Next() {
			if cs := it.Row().Cells; len(cs) > 0 {
				got[string(it.Row().Key)] = string(cs[0].Value)
			}
		}
		err := it.Err()
		it.Close()
		if err == nil {
			return got
		}
		if ctx.Err() != nil {
			t.Fatalf("reading table %s: %v", table, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// render renders rows in key order for comparisons.
func render(rows map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(rows)) {
		fmt.Fprintf(&b, "%s=%s ", k, rows[k])
	}
	return b.String()
}

// TestCloneThroughTheCluster: a clone of a snapshot, served by real
// tablet servers, reads the snapshot's cells at once, and still after the
// source table was overwritten, compacted, split, merged and deleted and
// the clone itself was written, compacted, split and merged; restore
// then recreates the deleted source table from the snapshot, and, run
// again on the live table, takes a safety snapshot of its state first.
func TestCloneThroughTheCluster(t *testing.T) {
	t.Run("disk", func(t *testing.T) { runCloneThroughTheCluster(t, "") })
	t.Run("seaweedfs", func(t *testing.T) {
		seaweedtest.Need(t)
		runCloneThroughTheCluster(t, LocalStore)
	})
}

// runCloneThroughTheCluster is TestCloneThroughTheCluster with the
// tablets on storage (Config.Storage: "" for the local disk).
func runCloneThroughTheCluster(t *testing.T, storage string) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	_, admin := startWithAdmin(ctx, t, Config{Servers: 2, Dir: t.TempDir(), Storage: storage})
	a := admin.Admin()
	const src, clone = "source", "cloned"
	if err := a.CreateTable(ctx, src, []families.Family{families.Default("cf")}, [][]byte{[]byte("r050")}); err != nil {
		t.Fatal(err)
	}
	tbl := admin.Open(src)
	put := func(tb *client.Table, row, v string) error {
		return tb.Apply(ctx, []byte(row), client.NewMutation().Set("cf", []byte("q"), 1000, []byte(v)))
	}
	for { // until the new tablets serve
		if err := put(tbl, "r000", "v0"); err == nil {
			break
		} else if ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	want := map[string]string{}
	for i := range 100 {
		row, v := fmt.Sprintf("r%03d", i), fmt.Sprint("v", i)
		if err := put(tbl, row, v); err != nil {
			t.Fatal(err)
		}
		want[row] = v
	}
	if _, err := a.CreateSnapshot(ctx, src, "before"); err != nil {
		t.Fatal(err)
	}
	info, err := a.CloneSnapshot(ctx, "before", clone)
	if err != nil {
		t.Fatal(err)
	}
	if info.Table != clone || info.Tablets != 2 {
		t.Fatalf("clone: %+v", info)
	}
	if _, err := a.CloneSnapshot(ctx, "before", clone); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("a second clone into %s: %v, want ALREADY_EXISTS", clone, err)
	}
	if _, err := a.CloneSnapshot(ctx, "nosuch", "x"); status.Code(err) != codes.NotFound {
		t.Fatalf("a clone of a missing snapshot: %v, want NOT_FOUND", err)
	}
	check := func(what string) {
		t.Helper()
		if got := readTable(ctx, t, admin, clone); render(got) != render(want) {
			t.Fatalf("%s: the clone reads\n%s\nwant\n%s", what, render(got), render(want))
		}
	}
	check("at once")

	// The source: overwritten, compacted, split, merged, deleted.
	for i := range 100 {
		if err := put(tbl, fmt.Sprintf("r%03d", i), "new"); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.CompactTable(ctx, src, true); err != nil {
		t.Fatal(err)
	}
	check("after the source's major compaction")
	if err := a.SplitTablet(ctx, src, []byte("r025")); err != nil {
		t.Fatal(err)
	}
	if err := a.CompactTable(ctx, src, true); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.MergeTablets(ctx, src, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := a.CompactTable(ctx, src, true); err != nil {
		t.Fatal(err)
	}
	check("after the source's splits, merges and compactions")
	if err := a.DeleteTable(ctx, src); err != nil {
		t.Fatal(err)
	}
	check("after the source's deletion")
	// The snapshot may go too: it retires while its clone names its files.
	if err := a.DeleteSnapshot(ctx, "before"); err != nil {
		t.Fatal(err)
	}
	if list, err := a.ListSnapshots(ctx, ""); err != nil || len(list) != 0 {
		t.Fatalf("list after the delete: %+v, %v", list, err)
	}
	check("after the snapshot's deletion")

	// The clone: written, split, compacted, merged.
	ct := admin.Open(clone)
	for i := 100; i < 120; i++ {
		row, v := fmt.Sprintf("r%03d", i), fmt.Sprint("c", i)
		if err := put(ct, row, v); err != nil {
			t.Fatal(err)
		}
		want[row] = v
	}
	if err := a.SplitTablet(ctx, clone, []byte("r075")); err != nil {
		t.Fatal(err)
	}
	check("after the clone's split")
	if err := a.CompactTable(ctx, clone, false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.MergeTablets(ctx, clone, nil, nil); err != nil {
		t.Fatal(err)
	}
	check("after the clone's merge")
	if err := a.CompactTable(ctx, clone, true); err != nil {
		t.Fatal(err)
	}
	check("after the clone's major compaction")

	// Restore: a snapshot of the clone, the clone changed, then put back.
	if _, err := a.CreateSnapshot(ctx, clone, "cloned-1"); err != nil {
		t.Fatal(err)
	}
	before := maps.Clone(want)
	for i := range 10 {
		if err := put(ct, fmt.Sprintf("r%03d", i), "changed"); err != nil {
			t.Fatal(err)
		}
		want[fmt.Sprintf("r%03d", i)] = "changed"
	}
	r, err := a.RestoreSnapshot(ctx, "cloned-1")
	if err != nil {
		t.Fatal(err)
	}
	if r.Table != clone || !strings.HasPrefix(r.SafetySnapshot, "failsafe-cloned-1-") {
		t.Fatalf("restore: %+v", r)
	}
	if got := readTable(ctx, t, admin, clone); render(got) != render(before) {
		t.Fatalf("after the restore the table reads\n%s\nwant\n%s", render(got), render(before))
	}
	// The safety snapshot holds the state the restore replaced.
	if _, err := a.CloneSnapshot(ctx, r.SafetySnapshot, "safety"); err != nil {
		t.Fatal(err)
	}
	if got := readTable(ctx, t, admin, "safety"); render(got) != render(want) {
		t.Fatalf("the safety snapshot reads\n%s\nwant\n%s", render(got), render(want))
	}
	// Restoring a table that no longer exists creates it again.
	if err := a.DeleteTable(ctx, clone); err != nil {
		t.Fatal(err)
	}
	r, err = a.RestoreSnapshot(ctx, "cloned-1")
	if err != nil || r.SafetySnapshot != "" {
		t.Fatalf("restore of a deleted table: %+v, %v", r, err)
	}
	if got := readTable(ctx, t, admin, clone); render(got) != render(before) {
		t.Fatalf("the deleted table restored reads\n%s\nwant\n%s", render(got), render(before))
	}
}
