package backup_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/backup"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/devcluster"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/internal/seaweed"
	"github.com/tabuladb/tabula/internal/seaweed/seaweedtest"
	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/vfs/backend"
)

// world is a dev cluster on a local storage root and an admin client.
type world struct {
	c    *devcluster.Cluster
	cli  *client.Client
	root string
}

func startWorld(ctx context.Context, t testing.TB) *world {
	t.Helper()
	dir := t.TempDir()
	c, err := devcluster.Start(ctx, devcluster.Config{Dir: dir, Servers: 2, LeaseTTL: 5 * time.Second, NoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	cli, err := client.NewClientWithOptions(ctx, client.Options{Masters: []string{c.MasterAddr()}, TLS: c.ClientTLS(), Token: c.AdminToken()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return &world{c: c, cli: cli, root: filepath.Join(dir, "data")}
}

// startWorldAndStore is startWorld and a SeaweedFS (bucket "backups") to
// back up to; without a weed binary t is skipped (seaweedtest.Need).
func startWorldAndStore(ctx context.Context, t testing.TB) (*world, *seaweed.Server) {
	t.Helper()
	srv := seaweedtest.Start(t, seaweed.Config{Bucket: "backups"})
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	return startWorld(ctx, t), srv
}

// fill creates table (two tablets split at "r100", families cf, g and the
// sum family n) and writes rows with several versions, sums of two inputs,
// some rows deleted.
func (w *world) fill(ctx context.Context, t *testing.T, table string) {
	t.Helper()
	sum := families.Default("n")
	sum.ValueType = families.Sum
	if err := w.cli.Admin().CreateTable(ctx, table, []families.Family{families.Default("cf"), families.Default("g"), sum}, [][]byte{[]byte("r100")}); err != nil {
		t.Fatal(err)
	}
	tbl := w.cli.Open(table)
	for i := range 200 {
		row := fmt.Appendf(nil, "r%03d", i)
		m := client.NewMutation().Set("cf", []byte("q"), 1000, fmt.Appendf(nil, "v%d", i)).
			Set("cf", []byte("q"), 2000, fmt.Appendf(nil, "w%d", i)).Set("g", fmt.Appendf(nil, "c%d", i%3), 1000, []byte("x")).
			AddToCell("n", []byte("s"), 0, int64(i)).AddToCell("n", []byte("s"), 0, 5)
		applyWhenServing(ctx, t, tbl, row, m)
	}
	for i := 0; i < 200; i += 7 {
		applyWhenServing(ctx, t, tbl, fmt.Appendf(nil, "r%03d", i), client.NewMutation().DeleteRow())
	}
}

// applyWhenServing applies m, retrying while the new table's tablets are
// being assigned.
func applyWhenServing(ctx context.Context, t testing.TB, tbl *client.Table, row []byte, m *client.Mutation) {
	t.Helper()
	for {
		err := tbl.Apply(ctx, row, m)
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cells reads every cell of table, every version, as sorted lines.
func cells(ctx context.Context, t *testing.T, cli *client.Client, table string) []string {
	t.Helper()
	var out []string
	it := cli.Open(table).ReadRows(ctx, client.InfiniteRange(nil))
	for it.Next() {
		r := it.Row()
		for _, c := range r.Cells {
			out = append(out, fmt.Sprintf("%s %s:%s @%d = %s", r.Key, c.Family, c.Qualifier, c.Timestamp, c.Value))
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// clock returns a clock that moves one second per call.
func clock() func() time.Time {
	now := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	return func() time.Time { now = now.Add(time.Second); return now }
}

// TestRoundTripIncrementalVerifyDelete: a backup restored into a new table
// equals the source at the snapshot cell for cell (writes after it are
// not in it); a second backup of the unchanged table copies no file; a
// damaged file and a missing one fail verify, each named; delete removes
// only the files no other backup names (docs/CONTRACTS.md §7).
func TestRoundTripIncrementalVerifyDelete(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	w := startWorld(ctx, t)
	w.fill(ctx, t, "src")
	want := cells(ctx, t, w.cli, "src")
	if len(want) == 0 {
		t.Fatal("the source reads empty")
	}
	loc, err := backup.Open(ctx, t.TempDir(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	now := clock()
	opts := backup.CreateOptions{Table: "src", To: loc, Source: vfs.Default, SourceRoot: w.root, Cluster: w.cli.Admin(), Workers: 3, Now: now}
	first, err := backup.Create(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	m := first.Manifest
	if len(m.Tablets) != 2 || len(m.Files) == 0 || first.Copied != len(m.Files) || first.Present != 0 {
		t.Fatalf("first backup: %d tablets, %d files, copied %d, present %d", len(m.Tablets), len(m.Files), first.Copied, first.Present)
	}
	second, err := backup.Create(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if second.Copied != 0 || second.Present != len(second.Manifest.Files) || second.Manifest.Name == m.Name {
		t.Fatalf("a second backup of the unchanged table copied %d files (present %d of %d)", second.Copied, second.Present, len(second.Manifest.Files))
	}
	snaps, err := w.cli.Admin().ListSnapshots(ctx, "src")
	if err != nil || len(snaps) != 0 {
		t.Fatalf("the backups left snapshots: %+v, %v", snaps, err)
	}

	// Writes after the backup are not restored.
	applyWhenServing(ctx, t, w.cli.Open("src"), []byte("r150"), client.NewMutation().Set("cf", []byte("late"), 5, []byte("x")))
	res, err := backup.Restore(ctx, backup.RestoreOptions{From: loc, Name: m.Name, Table: "dst", Client: w.cli, ScratchDir: t.TempDir(), BatchRows: 37})
	if err != nil {
		t.Fatal(err)
	}
	got := cells(ctx, t, w.cli, "dst")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("restored %d cells (%+v), want the source's %d at the snapshot:\ngot  %v\nwant %v", len(got), res, len(want), got, want)
	}
	info, err := w.cli.Admin().DescribeTable(ctx, "dst")
	if err != nil || len(info.Families) != 3 || !info.Families[2].ValueType.IsAggregate() {
		t.Fatalf("restored schema: %+v, %v", info, err)
	}
	tablets, err := w.cli.Admin().Tablets(ctx, "dst")
	if err != nil || len(tablets) != 2 {
		t.Fatalf("restored tablets: %+v, %v", tablets, err)
	}

	rep, err := backup.Verify(ctx, loc, m.Name, 2, nil)
	if err != nil || len(rep.Damaged) != 0 || rep.Files != len(m.Files) {
		t.Fatalf("verify of an intact backup: %+v, %v", rep, err)
	}
	if len(m.Files) < 2 {
		t.Fatalf("want two files to damage, have %d", len(m.Files))
	}
	damaged, missing := m.Files[0].Path, m.Files[1].Path
	p := filepath.Join(loc.Root, backup.FilesFolder, filepath.FromSlash(damaged))
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(loc.Root, backup.FilesFolder, filepath.FromSlash(missing))); err != nil {
		t.Fatal(err)
	}
	rep, err = backup.Verify(ctx, loc, m.Name, 2, nil)
	if err != nil || len(rep.Damaged) != 2 {
		t.Fatalf("verify of a damaged backup: %+v, %v", rep, err)
	}
	problems := map[string]string{}
	for _, d := range rep.Damaged {
		problems[d.Path] = d.Problem
	}
	if !strings.Contains(problems[damaged], "CRC32C") || problems[missing] != "missing" {
		t.Fatalf("verify named %v; want %s damaged and %s missing", problems, damaged, missing)
	}
	if _, err := backup.Restore(ctx, backup.RestoreOptions{From: loc, Name: m.Name, Table: "dst2", Client: w.cli, ScratchDir: t.TempDir()}); err == nil {
		t.Fatal("a damaged backup restored")
	}

	// Both backups name the same files: deleting one removes none.
	del, err := backup.Delete(ctx, loc, second.Manifest.Name)
	if err != nil || del.Files != 0 {
		t.Fatalf("deleting the second backup removed %d files (%v); the first names them all", del.Files, err)
	}
	del, err = backup.Delete(ctx, loc, m.Name)
	if err != nil || del.Files != len(m.Files) {
		t.Fatalf("deleting the last backup removed %d of %d files: %v", del.Files, len(m.Files), err)
	}
	if list, err := backup.List(loc); err != nil || len(list) != 0 {
		t.Fatalf("after deleting both: %+v, %v", list, err)
	}
	left, _ := filepath.Glob(filepath.Join(loc.Root, backup.FilesFolder, "src", "*", "*", "*"))
	if len(left) != 0 {
		t.Fatalf("files left after deleting every backup: %v", left)
	}
}

// TestBackupOnAnObjectStore: a backup to SeaweedFS, verified, restored
// into another cluster, and a second one copying nothing; the store requests of each are logged
// (docs/BENCHMARKS.md "Backups: store requests and bytes").
func TestBackupOnAnObjectStore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	w, srv := startWorldAndStore(ctx, t)
	w.fill(ctx, t, "objsrc")
	want := cells(ctx, t, w.cli, "objsrc")
	loc, err := backup.Open(ctx, "s3://backups/nightly?endpoint="+srv.Endpoint(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	opts := backup.CreateOptions{Table: "objsrc", To: loc, Source: vfs.Default, SourceRoot: w.root, Cluster: w.cli.Admin(), Workers: 2, Now: clock()}
	reqs := func() int64 { r, _ := backend.Requests(loc.FS); return r.Total() }
	before, _ := backend.Requests(loc.FS)
	first, err := backup.Create(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := backend.Requests(loc.FS)
	m := first.Manifest
	t.Logf("first backup: %d tablets, %d files, %d bytes copied; store requests %+v (total %d)", len(m.Tablets), len(m.Files), first.CopiedBytes, after.Sub(before), after.Sub(before).Total())
	r0 := reqs()
	second, err := backup.Create(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	after2, _ := backend.Requests(loc.FS)
	t.Logf("second backup, unchanged table: copied %d files; store requests %+v (total %d)", second.Copied, after2.Sub(after), reqs()-r0)
	if second.Copied != 0 || first.Copied != len(m.Files) {
		t.Fatalf("copied %d then %d of %d files", first.Copied, second.Copied, len(m.Files))
	}
	rep, err := backup.Verify(ctx, loc, m.Name, 2, nil)
	if err != nil || len(rep.Damaged) != 0 {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	// Into another cluster: the backup needs nothing of the first.
	other := startWorld(ctx, t)
	if _, err := backup.Restore(ctx, backup.RestoreOptions{From: loc, Name: m.Name, Table: "objdst", Client: other.cli, ScratchDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if got := cells(ctx, t, other.cli, "objdst"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("restored from the object store into another cluster: %d cells, want %d", len(got), len(want))
	}
	list, err := backup.List(loc)
	if err != nil || len(list) != 2 || !list[0].Complete || !list[1].Complete {
		t.Fatalf("list: %+v, %v", list, err)
	}
	if _, err := backup.Delete(ctx, loc, m.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Delete(ctx, loc, second.Manifest.Name); err != nil {
		t.Fatal(err)
	}
	if list, err := backup.List(loc); err != nil || len(list) != 0 {
		t.Fatalf("after deleting both: %+v, %v", list, err)
	}
}

// TestUnfinishedBackupIsListedResumedAndDeleted: a create stopped after
// its first copied file leaves an unfinished backup (listed so, refused by
// describe and verify); deleting it removes the file it copied; a backup
// of a named snapshot keeps the snapshot, and one resumed from it copies
// only what the stopped run had not.
func TestUnfinishedBackupIsListedResumedAndDeleted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	w := startWorld(ctx, t)
	w.fill(ctx, t, "half")
	if _, err := w.cli.Admin().CreateSnapshot(ctx, "half", "kept"); err != nil {
		t.Fatal(err)
	}
	loc, err := backup.Open(ctx, t.TempDir(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	namedOpts := func() backup.CreateOptions {
		return backup.CreateOptions{Table: "half", To: loc, Source: vfs.Default, SourceRoot: w.root, Cluster: w.cli.Admin(),
			Snapshot: "kept", Workers: 1, Now: clock()}
	}
	// Stopped after its first file: the context ends there.
	sctx, scancel := context.WithCancel(ctx)
	opts := namedOpts()
	opts.OnCopied = func(string) { scancel() }
	if _, err := backup.Create(sctx, opts); err == nil {
		t.Fatal("a create whose context ended after one file completed")
	}
	list, err := backup.List(loc)
	if err != nil || len(list) != 1 || list[0].Complete {
		t.Fatalf("after a stopped create: %+v, %v", list, err)
	}
	name := list[0].Name
	if _, err := backup.Describe(loc, name); err == nil || !strings.Contains(err.Error(), "unfinished") {
		t.Fatalf("describe of an unfinished backup: %v", err)
	}
	if _, err := backup.Delete(ctx, loc, name); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(loc.Root, backup.FilesFolder, "half", "*", "*", "*")); len(left) != 0 {
		t.Fatalf("deleting the unfinished backup left %v", left)
	}

	// Stopped again, then resumed: the second run completes the same backup.
	sctx, scancel = context.WithCancel(ctx)
	opts = namedOpts()
	opts.OnCopied = func(string) { scancel() }
	if _, err := backup.Create(sctx, opts); err == nil {
		t.Fatal("a create whose context ended after one file completed")
	}
	opts.OnCopied = nil
	res, err := backup.Create(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.ResumedBackup == "" || res.Resumed != 1 || res.Copied != len(res.Manifest.Files)-1 || res.Manifest.Name != res.ResumedBackup {
		t.Fatalf("the resumed create: %+v", res)
	}
	if snaps, err := w.cli.Admin().ListSnapshots(ctx, "half"); err != nil || len(snaps) != 1 || snaps[0].Name != "kept" {
		t.Fatalf("the named snapshot after its backup: %+v, %v", snaps, err)
	}
	if rep, err := backup.Verify(ctx, loc, res.Manifest.Name, 1, nil); err != nil || len(rep.Damaged) != 0 {
		t.Fatalf("verify of the resumed backup: %+v, %v", rep, err)
	}
}
