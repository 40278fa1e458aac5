package devcluster

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/tabletserver/tablet"
)

// readSnapshotFiles reads a snapshot whole from storage, through the
// engine: each tablet's hold opened as a clone would be, in a scratch
// folder (docs/CONTRACTS.md §4a). It returns row → value of family cf.
func readSnapshotFiles(t *testing.T, root string, info client.SnapshotInfo, tabletIDs []string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for i, id := range tabletIDs {
		dir := filepath.Join(root, "tables", info.Table, id)
		to := filepath.Join(t.TempDir(), fmt.Sprint("c", i))
		if _, err := manifest.SaveClone(nil, dir, info.ID, to); err != nil {
			t.Fatalf("hold of tablet %s: %v", id, err)
		}
		tb, err := tablet.Open(tablet.Options{Dir: to, Families: []families.Family{families.Default("cf")}, DisableBackgroundWork: true})
		if err != nil {
			t.Fatalf("open the hold of tablet %s: %v", id, err)
		}
		it, err := tb.NewRowIterator(context.Background(), tablet.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for it.Next() {
			for _, c := range it.Cells() {
				got[string(it.Row())] = string(c.Value)
			}
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		_ = tb.Close()
	}
	return got
}

// TestSnapshotThroughTheCluster: `tabula snapshot`'s calls against a
// cluster: a snapshot of a table of two tablets on two servers holds every
// acknowledged write, its sizes move from shared to its own as the table
// is rewritten, and it reads whole after the table was overwritten,
// compacted and deleted.
func TestSnapshotThroughTheCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	dir := t.TempDir()
	_, admin := startWithAdmin(ctx, t, Config{Servers: 2, Dir: dir})
	const table = "snapped"
	if err := admin.Admin().CreateTable(ctx, table, []families.Family{families.Default("cf")}, [][]byte{[]byte("r050")}); err != nil {
		t.Fatal(err)
	}
	tbl := admin.Open(table)
	put := func(row, v string) error {
		return tbl.Apply(ctx, []byte(row), client.NewMutation().Set("cf", []byte("q"), 1000, []byte(v)))
	}
	for { // until the new tablets serve
		if err := put("r000", "v0"); err == nil {
			break
		} else if ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	want := map[string]string{}
	for i := range 100 {
		row, v := fmt.Sprintf("r%03d", i), fmt.Sprint("v", i)
		if err := put(row, v); err != nil {
			t.Fatal(err)
		}
		want[row] = v
	}
	info, err := admin.Admin().CreateSnapshot(ctx, table, "before")
	if err != nil {
		t.Fatal(err)
	}
	if info.State != "ready" || info.Tablets != 2 || info.Table != table {
		t.Fatalf("created %+v", info)
	}
	if _, err := admin.Admin().CreateSnapshot(ctx, table, "before"); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("a second snapshot named before: %v, want ALREADY_EXISTS", err)
	}
	if _, err := admin.Admin().CreateSnapshot(ctx, "nosuch", "x"); status.Code(err) != codes.NotFound {
		t.Fatalf("a snapshot of a missing table: %v, want NOT_FOUND", err)
	}
	list, err := admin.Admin().ListSnapshots(ctx, "")
	if err != nil || len(list) != 1 || list[0].ID != info.ID {
		t.Fatalf("list: %+v, %v", list, err)
	}
	d, err := admin.Admin().DescribeSnapshot(ctx, "before")
	if err != nil {
		t.Fatal(err)
	}
	if d.Files == 0 || d.Bytes == 0 || d.ExclusiveBytes != 0 || d.SharedBytes != d.Bytes {
		t.Fatalf("at once, every byte is shared with the table: %+v", d)
	}
	tablets, err := admin.Admin().Tablets(ctx, table)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tt := range tablets {
		ids = append(ids, tt.ID)
	}
	root := filepath.Join(dir, "data")
	if got := readSnapshotFiles(t, root, info, ids); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the snapshot reads\n%v\nwant\n%v", got, want)
	}

	// Overwritten and compacted: the snapshot's files are its own now.
	for i := range 100 {
		if err := put(fmt.Sprintf("r%03d", i), "new"); err != nil {
			t.Fatal(err)
		}
	}
	if err := admin.Admin().CompactTable(ctx, table, true); err != nil {
		t.Fatal(err)
	}
	d, err = admin.Admin().DescribeSnapshot(ctx, "before")
	if err != nil {
		t.Fatal(err)
	}
	if d.ExclusiveBytes != d.Bytes || d.Bytes == 0 {
		t.Fatalf("after a major compaction the snapshot's bytes are its own: %+v", d)
	}
	if err := admin.Admin().DeleteTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	if got := readSnapshotFiles(t, root, info, ids); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the table's deletion the snapshot reads\n%v\nwant\n%v", got, want)
	}
	if err := admin.Admin().DeleteSnapshot(ctx, "before"); err != nil {
		t.Fatal(err)
	}
	if list, err := admin.Admin().ListSnapshots(ctx, ""); err != nil || len(list) != 0 {
		t.Fatalf("list after delete: %+v, %v", list, err)
	}
	if err := admin.Admin().DeleteSnapshot(ctx, "before"); status.Code(err) != codes.NotFound {
		t.Fatalf("deleting it again: %v, want NOT_FOUND", err)
	}
}
