package master

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/tabletserver/tablet"
)

var snapSeed = flag.Uint64("snapshot-seed", 0, "seed of the randomized snapshot model test (0: pick one and log it)")

// snapWorld is one table's tablets, served by engines in this process, the
// model of its rows, and its snapshots, over a master whose GC sweeps the
// storage root. It plays the tablet servers' part: splits and merges
// commit in etcd as CommitSplit and CommitMerge do (the parents' records
// replaced by the children's), and a deleted snapshot's holds are released
// on the tablets that hold them.
type snapWorld struct {
	t       *testing.T
	e       *gcEnv
	rng     *rand.Rand
	table   string
	tablets []*snapTablet // in key order
	rows    map[string]string
	snaps   map[string]*snapModel
	deleted bool // the table is deleted
	next    int  // for values and ids
	scratch string
	// all lists every world over the same storage root: this one and its
	// clones' (TestCloneModel), whose held tablets release dead holds.
	all *[]*snapWorld
}

type snapTablet struct {
	id         string
	start, end []byte
	tb         *tablet.Tablet
}

// snapModel is a snapshot: what it must read, and the folders holding it.
type snapModel struct {
	rows map[string]string
	dirs []string
}

// newSnapWorld starts a GC leader over an empty storage root and a table
// "t" of one empty tablet.
func newSnapWorld(t *testing.T, seed uint64) *snapWorld {
	w := &snapWorld{t: t, e: newGCEnv(t, Options{}), rng: rand.New(rand.NewPCG(seed, 1)), table: "t",
		rows: map[string]string{}, snaps: map[string]*snapModel{}, scratch: t.TempDir()}
	w.all = &[]*snapWorld{w}
	first := w.open(meta.NewTabletID(), nil, nil)
	w.put(first)
	w.tablets = []*snapTablet{first}
	t.Cleanup(func() {
		for _, st := range w.tablets {
			_ = st.tb.Close()
		}
	})
	return w
}

func (w *snapWorld) dir(id string) string { return w.e.dir(w.table, id) }

func (w *snapWorld) open(id string, start, end []byte) *snapTablet {
	w.t.Helper()
	return &snapTablet{id: id, start: start, end: end, tb: openTablet(w.t, w.dir(id), start, end)}
}

func (w *snapWorld) put(st *snapTablet) {
	w.t.Helper()
	w.e.putTablet(w.table, st.id, string(st.start), string(st.end))
}

func (w *snapWorld) owner(row string) *snapTablet {
	for _, st := range w.tablets {
		if (st.start == nil || row >= string(st.start)) && (st.end == nil || row < string(st.end)) {
			return st
		}
	}
	w.t.Fatalf("no tablet holds row %q", row)
	return nil
}

func (w *snapWorld) write() {
	for range 1 + w.rng.IntN(20) {
		row := fmt.Sprintf("r%03d", w.rng.IntN(200))
		w.next++
		v := fmt.Sprintf("v%d", w.next)
		err := w.owner(row).tb.Apply(context.Background(), []byte(row), []cell.Mutation{{Kind: cell.SetCell, Family: "cf", Qualifier: []byte("q"), Timestamp: 1, Value: []byte(v)}})
		if err != nil {
			w.t.Fatal(err)
		}
		w.rows[row] = v
	}
}

func (w *snapWorld) split() {
	i := w.rng.IntN(len(w.tablets))
	p := w.tablets[i]
	// A split row strictly inside the tablet's range.
	var cands []string
	for r := range 200 {
		row := fmt.Sprintf("r%03d", r)
		if (p.start == nil || row > string(p.start)) && (p.end == nil || row < string(p.end)) {
			cands = append(cands, row)
		}
	}
	if len(cands) == 0 {
		return
	}
	row := []byte(cands[w.rng.IntN(len(cands))])
	l, r := meta.NewTabletID(), meta.NewTabletID()
	if err := p.tb.Split(context.Background(), row, w.dir(l), w.dir(r)); err != nil {
		w.t.Fatalf("split %s at %q: %v", p.id, row, err)
	}
	left, right := w.open(l, p.start, row), w.open(r, row, p.end)
	w.put(left)
	w.put(right)
	w.e.deleteTablet(w.table, p.id)
	w.tablets = slices.Replace(w.tablets, i, i+1, left, right)
}

func (w *snapWorld) merge() {
	if len(w.tablets) < 2 {
		return
	}
	i := w.rng.IntN(len(w.tablets) - 1)
	l, r := w.tablets[i], w.tablets[i+1]
	id := meta.NewTabletID()
	if err := tablet.Merge(context.Background(), l.tb, r.tb, w.dir(id)); err != nil {
		w.t.Fatalf("merge %s and %s: %v", l.id, r.id, err)
	}
	m := w.open(id, l.start, r.end)
	w.put(m)
	w.e.deleteTablet(w.table, l.id)
	w.e.deleteTablet(w.table, r.id)
	w.tablets = slices.Replace(w.tablets, i, i+2, m)
}

func (w *snapWorld) dropRows() {
	a, b := w.rng.IntN(200), w.rng.IntN(200)
	if a > b {
		a, b = b, a
	}
	start, end := fmt.Sprintf("r%03d", a), fmt.Sprintf("r%03d", b+1)
	for _, st := range w.tablets {
		if err := st.tb.DropRange(context.Background(), []byte(start), []byte(end)); err != nil {
			w.t.Fatal(err)
		}
	}
	for row := range w.rows {
		if row >= start && row < end {
			delete(w.rows, row)
		}
	}
}

// snapshot does what a snapshot's creation does: the record first, then a
// hold on every tablet, then the record ready with its tablets. It
// returns the snapshot's id, which is also its name.
func (w *snapWorld) snapshot() string {
	w.next++
	// Unique across the worlds, a table restored under its name too.
	id := fmt.Sprintf("%s-%d-s%d", w.table, len(*w.all), w.next)
	rec := &tabulapb.Snapshot{Name: id, Id: id, Table: w.table, Schema: &tabulapb.TableSchema{Name: w.table}, State: meta.SnapshotCreating}
	w.putSnapshot(rec)
	s := &snapModel{rows: maps.Clone(w.rows)}
	for _, st := range w.tablets {
		if _, err := st.tb.Snapshot(context.Background(), id); err != nil {
			w.t.Fatal(err)
		}
		s.dirs = append(s.dirs, w.dir(st.id))
		rec.Tablets = append(rec.Tablets, &tabulapb.SnapshotTablet{TabletId: st.id, StartKey: st.start, EndKey: st.end})
	}
	rec.State = meta.SnapshotReady
	w.putSnapshot(rec)
	w.snaps[id] = s
	return id
}

func (w *snapWorld) putSnapshot(rec *tabulapb.Snapshot) {
	w.t.Helper()
	if _, err := w.e.c.cli.Put(context.Background(), w.e.c.layout.SnapshotKey(rec.Id), meta.EncodeSnapshot(rec)); err != nil {
		w.t.Fatal(err)
	}
}

// deleteSnapshot deletes the snapshot through the master (a snapshot with
// clones retires), then releases the holds whose record is gone (a tablet
// server's part).
func (w *snapWorld) deleteSnapshot(id string) {
	if err := w.e.m.deleteSnapshot(context.Background(), id); err != nil {
		w.t.Fatalf("deleting snapshot %s: %v", id, err)
	}
	delete(w.snaps, id)
	w.releaseDead()
}

// releaseDead releases, on every held tablet of every world, the holds
// whose record is gone, as the tablet servers' releaseDeadHolds does.
func (w *snapWorld) releaseDead() {
	w.t.Helper()
	live, err := meta.ReadSnapshotIDs(context.Background(), w.e.c.cli, w.e.c.layout)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, o := range *w.all {
		for _, st := range o.tablets {
			for _, id := range st.tb.Snapshots() {
				if _, found := slices.BinarySearch(live, id); found {
					continue
				}
				if err := st.tb.ReleaseSnapshot(id); err != nil {
					w.t.Fatal(err)
				}
			}
		}
	}
}

// deleteTable does what DeleteTable does once its tablets are unloaded:
// the records go, then the files (removeTableFiles).
func (w *snapWorld) deleteTable() {
	for _, st := range w.tablets {
		if err := st.tb.Close(); err != nil {
			w.t.Fatal(err)
		}
		w.e.deleteTablet(w.table, st.id)
	}
	if _, err := w.e.c.cli.Delete(context.Background(), w.e.c.layout.TableKey(w.table)); err != nil {
		w.t.Fatal(err)
	}
	w.tablets, w.rows, w.deleted = nil, nil, true
	w.e.m.removeTableFiles(w.table)
}

// sweep ages every file past the grace period and runs the GC.
func (w *snapWorld) sweep() {
	if d := filepath.Join(w.e.root, "tables"); exists(w.t, d) {
		age(w.t, d, 2*w.e.m.opts.GCGrace)
	}
	w.e.sweep()
	// The servers release the holds of records the sweep dropped.
	w.releaseDead()
}

// renderRows renders rows as "row=value ..." in key order.
func renderRows(rows map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(rows)) {
		fmt.Fprintf(&b, "%s=%s ", k, rows[k])
	}
	return b.String()
}

func scanAll(t *testing.T, tb *tablet.Tablet, into map[string]string) {
	t.Helper()
	it, err := tb.NewRowIterator(context.Background(), tablet.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for it.Next() {
		for _, c := range it.Cells() {
			into[string(it.Row())] = string(c.Value)
		}
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
}

// readSnapshot reads a snapshot whole, through the engine: each hold
// opened as a clone would be, in a scratch folder outside the storage root.
func (w *snapWorld) readSnapshot(id string, s *snapModel) map[string]string {
	w.t.Helper()
	got := map[string]string{}
	for _, dir := range s.dirs {
		w.next++
		to := filepath.Join(w.scratch, fmt.Sprintf("c%d", w.next))
		if _, err := manifest.SaveClone(nil, dir, id, to); err != nil {
			w.t.Fatalf("snapshot %s: hold in %s: %v", id, dir, err)
		}
		tb, err := tablet.Open(tablet.Options{Dir: to, Families: gcFamilies, DisableBackgroundWork: true})
		if err != nil {
			w.t.Fatalf("snapshot %s: open the hold of %s: %v", id, dir, err)
		}
		scanAll(w.t, tb, got)
		if err := tb.Close(); err != nil {
			w.t.Fatal(err)
		}
	}
	return got
}

// check reads every live snapshot and the table whole.
func (w *snapWorld) check(step int, op string) {
	w.t.Helper()
	for _, id := range slices.Sorted(maps.Keys(w.snaps)) {
		s := w.snaps[id]
		if got, want := renderRows(w.readSnapshot(id, s)), renderRows(s.rows); got != want {
			w.t.Fatalf("step %d (%s): snapshot %s reads\n%s\nwant\n%s", step, op, id, got, want)
		}
	}
	got := map[string]string{}
	for _, st := range w.tablets {
		scanAll(w.t, st.tb, got)
	}
	if g, want := renderRows(got), renderRows(w.rows); g != want {
		w.t.Fatalf("step %d (%s): the table reads\n%s\nwant\n%s", step, op, g, want)
	}
}

// ssts lists every .sst under dir.
func ssts(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, ".sst") {
			out = append(out, p)
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestSnapshotModel runs random sequences of writes, flushes, compactions,
// splits, merges, range drops, snapshots, snapshot deletions, a table
// deletion and GC sweeps, and checks after each step that every live
// snapshot reads whole what the table held when it was taken; at the end,
// with every snapshot deleted, that no file is left that nothing
// references, and, once the table is deleted too, that nothing is left.
func TestSnapshotModel(t *testing.T) {
	seed := *snapSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -snapshot-seed %d)", seed, seed)
	rounds := 4
	if testing.Short() {
		rounds = 2
	}
	for round := range rounds {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			runSnapshotModel(t, seed+uint64(round))
		})
	}
}

func runSnapshotModel(t *testing.T, seed uint64) {
	w := newSnapWorld(t, seed)
	e := w.e
	ops := []struct {
		name   string
		weight int
		do     func()
	}{
		{"write", 8, w.write},
		{"flush", 3, func() {
			if err := w.tablets[w.rng.IntN(len(w.tablets))].tb.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
		}},
		{"compact", 3, func() {
			if err := w.tablets[w.rng.IntN(len(w.tablets))].tb.Compact(context.Background(), w.rng.IntN(2) == 0); err != nil {
				t.Fatal(err)
			}
		}},
		{"split", 2, w.split},
		{"merge", 2, w.merge},
		{"drop-rows", 1, w.dropRows},
		{"snapshot", 2, func() { w.snapshot() }},
		{"snapshot-delete", 1, func() {
			if len(w.snaps) > 0 {
				ids := slices.Sorted(maps.Keys(w.snaps))
				w.deleteSnapshot(ids[w.rng.IntN(len(ids))])
			}
		}},
		{"sweep", 2, w.sweep},
		{"delete-table", 0, w.deleteTable}, // chosen below, once
	}
	total := 0
	for _, op := range ops {
		total += op.weight
	}
	steps := 60
	deleteAt := -1
	if w.rng.IntN(2) == 0 {
		deleteAt = 20 + w.rng.IntN(steps-20)
	}
	counts := map[string]int{}
	defer func() { t.Logf("seed %d: ops %v", seed, counts) }()
	for step := range steps {
		name := ""
		if step == deleteAt {
			w.deleteTable()
			name = "delete-table"
		} else if w.deleted {
			// Only snapshots and sweeps are left to do.
			if len(w.snaps) > 0 && w.rng.IntN(3) == 0 {
				ids := slices.Sorted(maps.Keys(w.snaps))
				w.deleteSnapshot(ids[w.rng.IntN(len(ids))])
				name = "snapshot-delete"
			} else {
				w.sweep()
				name = "sweep"
			}
		} else {
			n := w.rng.IntN(total)
			for _, op := range ops {
				if n < op.weight {
					op.do()
					name = op.name
					break
				}
				n -= op.weight
			}
		}
		counts[name]++
		w.check(step, name)
	}

	// No leak: with every snapshot gone and every tablet compacted, the
	// sweep leaves exactly the live tablets' own files.
	for _, id := range slices.Sorted(maps.Keys(w.snaps)) {
		w.deleteSnapshot(id)
	}
	var want []string
	for _, st := range w.tablets {
		if err := st.tb.Compact(context.Background(), true); err != nil {
			t.Fatal(err)
		}
		s, found, err := manifest.Load(nil, w.dir(st.id))
		if err != nil || !found {
			t.Fatalf("manifest of %s: %v", st.id, err)
		}
		for _, f := range s.Files {
			want = append(want, filepath.Join(w.dir(st.id), filepath.FromSlash(f.Path)))
		}
	}
	w.sweep()
	slices.Sort(want)
	if got := ssts(t, filepath.Join(e.root, "tables")); !slices.Equal(got, want) {
		t.Fatalf("with no snapshot left the storage holds\n%v\nthe live tablets name\n%v", got, want)
	}
	if !w.deleted {
		w.deleteTable()
	}
	w.sweep()
	if exists(t, filepath.Join(e.root, "tables", w.table)) {
		t.Fatalf("the deleted table's folder is left: %v", ssts(t, filepath.Join(e.root, "tables", w.table)))
	}
}

// TestSnapshotOutlivesItsTable is Accumulo's data loss (apache/accumulo#1309,
// shared files deleted by the GC) asked of Tabula: the source table is
// split, compacted, merged, dropped and deleted around a snapshot, the GC
// sweeps after each, and the snapshot still reads whole; once it is
// deleted, nothing of the table is left.
func TestSnapshotOutlivesItsTable(t *testing.T) {
	w := newSnapWorld(t, 1)
	e := w.e
	steps := []struct {
		name string
		do   func()
	}{
		{"write", w.write}, {"write", w.write}, {"split", w.split}, {"write", w.write},
		{"snapshot", func() {
			w.snapshot()
			// Over split children that reference their parent's files.
			outside := 0
			for id, s := range w.snaps {
				for _, dir := range s.dirs {
					files, err := manifest.HeldFiles(nil, dir, id)
					if err != nil {
						t.Fatal(err)
					}
					for _, f := range files {
						if !strings.HasPrefix(f, dir+string(filepath.Separator)) {
							outside++
						}
					}
				}
			}
			if outside == 0 {
				t.Fatal("no hold references a parent's file: the test proves less than it says")
			}
		}},
		{"write", w.write}, {"split", w.split}, {"split", w.split},
		{"compact every tablet", func() {
			for _, st := range w.tablets {
				if err := st.tb.Compact(context.Background(), true); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"sweep", w.sweep},
		{"merge", w.merge}, {"merge", w.merge},
		{"drop every row", func() {
			for _, st := range w.tablets {
				if err := st.tb.DropRange(context.Background(), nil, nil); err != nil {
					t.Fatal(err)
				}
			}
			clear(w.rows)
		}},
		{"sweep", w.sweep},
		{"delete the table", w.deleteTable},
		{"sweep", w.sweep},
	}
	for i, s := range steps {
		s.do()
		w.check(i, s.name)
	}
	if len(w.snaps) != 1 {
		t.Fatalf("%d snapshots", len(w.snaps))
	}
	for id, s := range w.snaps {
		if len(s.rows) == 0 {
			t.Fatal("the snapshot holds no row: the test proves nothing")
		}
		w.deleteSnapshot(id)
	}
	w.sweep()
	if exists(t, filepath.Join(e.root, "tables", w.table)) {
		t.Fatalf("the deleted table's folder is left: %v", ssts(t, filepath.Join(e.root, "tables", w.table)))
	}
}
