package master

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tabuladb/tabula/auth"
	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/meta"
)

// cloneFrom clones the snapshot id (of world w, modelled by s) into table
// through the master (cloneSnapshot: the folders, then the table and the
// snapshot record in one transaction), and returns the new table's world:
// its tablets opened where the master put them, as their servers would.
func (w *snapWorld) cloneFrom(id string, s *snapModel, table string) *snapWorld {
	w.t.Helper()
	ctx := context.Background()
	if _, _, err := w.e.m.cloneSnapshot(ctx, id, table, auth.Read); err != nil {
		w.t.Fatalf("clone of %s into %s: %v", id, table, err)
	}
	return w.cloneWorld(table, s.rows)
}

// cloneWorld returns the world of table, which the master made from a
// snapshot reading rows: its tablets opened where their records say, as
// their servers would.
func (w *snapWorld) cloneWorld(table string, rows map[string]string) *snapWorld {
	w.t.Helper()
	c := &snapWorld{t: w.t, e: w.e, rng: w.rng, table: table, rows: maps.Clone(rows),
		snaps: map[string]*snapModel{}, scratch: w.t.TempDir(), all: w.all}
	recs, _, err := meta.GetTablets(context.Background(), w.e.c.cli, w.e.c.layout, table)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, r := range recs {
		c.tablets = append(c.tablets, c.open(r.ID, r.Start, r.End))
	}
	*w.all = append(*w.all, c)
	w.t.Cleanup(func() {
		for _, st := range c.tablets {
			_ = st.tb.Close()
		}
	})
	return c
}

// TestCloneModel runs random sequences over several tables sharing files:
// TestSnapshotModel's steps (writes, flushes, compactions, splits, merges,
// range drops, snapshots and their deletion, GC sweeps) on any live table,
// plus clones of any snapshot (of a source, of a clone, of a deleted
// table), restores (a safety snapshot, the table deleted, the snapshot
// cloned under its name) and table deletions. After each step every table
// and every live snapshot reads whole what the model says; at the end,
// with every snapshot deleted and every tablet compacted, the storage
// holds exactly the live tablets' files, and, with every table deleted,
// none.
func TestCloneModel(t *testing.T) {
	seed := *snapSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -snapshot-seed %d)", seed, seed)
	rounds := 3
	if testing.Short() {
		rounds = 2
	}
	for round := range rounds {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			runCloneModel(t, seed+uint64(round))
		})
	}
}

func runCloneModel(t *testing.T, seed uint64) {
	w0 := newSnapWorld(t, seed)
	rng, e := w0.rng, w0.e
	all := w0.all
	live := func() []*snapWorld {
		var out []*snapWorld
		for _, w := range *all {
			if !w.deleted {
				out = append(out, w)
			}
		}
		return out
	}
	type snapRef struct {
		w  *snapWorld
		id string
	}
	snaps := func() []snapRef {
		var out []snapRef
		for _, w := range *all {
			for _, id := range slices.Sorted(maps.Keys(w.snaps)) {
				out = append(out, snapRef{w, id})
			}
		}
		return out
	}
	clones := 0
	ops := []struct {
		name   string
		weight int
		do     func(w *snapWorld) // w: a live table
	}{
		{"write", 6, func(w *snapWorld) { w.write() }},
		{"flush", 2, func(w *snapWorld) {
			if err := w.tablets[rng.IntN(len(w.tablets))].tb.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
		}},
		{"compact", 3, func(w *snapWorld) {
			if err := w.tablets[rng.IntN(len(w.tablets))].tb.Compact(context.Background(), rng.IntN(2) == 0); err != nil {
				t.Fatal(err)
			}
		}},
		{"split", 2, func(w *snapWorld) { w.split() }},
		{"merge", 2, func(w *snapWorld) { w.merge() }},
		{"drop-rows", 1, func(w *snapWorld) { w.dropRows() }},
		{"snapshot", 3, func(w *snapWorld) { w.snapshot() }},
		{"snapshot-delete", 2, func(*snapWorld) {
			if ss := snaps(); len(ss) > 0 {
				s := ss[rng.IntN(len(ss))]
				s.w.deleteSnapshot(s.id)
			}
		}},
		{"clone", 3, func(*snapWorld) {
			if ss := snaps(); len(ss) > 0 && len(live()) < 5 {
				s := ss[rng.IntN(len(ss))]
				clones++
				s.w.cloneFrom(s.id, s.w.snaps[s.id], fmt.Sprintf("c%d", clones))
			}
		}},
		{"restore", 1, func(w *snapWorld) {
			if len(w.snaps) == 0 {
				return
			}
			ids := slices.Sorted(maps.Keys(w.snaps))
			id := ids[rng.IntN(len(ids))]
			w.snapshot() // the safety snapshot
			w.deleteTable()
			w.cloneFrom(id, w.snaps[id], w.table)
		}},
		{"delete-table", 1, func(w *snapWorld) {
			if len(live()) > 1 {
				w.deleteTable()
			}
		}},
		{"sweep", 3, func(w *snapWorld) { w.sweep() }},
	}
	total := 0
	for _, op := range ops {
		total += op.weight
	}
	counts := map[string]int{}
	defer func() { t.Logf("seed %d: ops %v, tables %d", seed, counts, len(*all)) }()
	for step := range 70 {
		ws := live()
		w := ws[rng.IntN(len(ws))]
		n := rng.IntN(total)
		name := ""
		for _, op := range ops {
			if n < op.weight {
				op.do(w)
				name = op.name
				break
			}
			n -= op.weight
		}
		counts[name]++
		for _, o := range *all {
			o.check(step, fmt.Sprintf("%s on %s, checking %s", name, w.table, o.table))
		}
	}
	if clones == 0 {
		t.Log("no clone made in this round")
	}

	// No leak: with every snapshot gone and every tablet compacted, the
	// sweeps leave exactly the live tablets' own files.
	for _, s := range snaps() {
		s.w.deleteSnapshot(s.id)
	}
	var want []string
	for _, w := range live() {
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
		w.check(-1, "the end, compacted")
	}
	// One sweep drops the retired records nothing needs now, and the
	// servers release their holds; the next removes the folders they kept.
	w0.sweep()
	w0.sweep()
	slices.Sort(want)
	if got := ssts(t, filepath.Join(e.root, "tables")); !slices.Equal(got, want) {
		t.Fatalf("with no snapshot left the storage holds\n%v\nthe live tablets name\n%v", got, want)
	}
	if ids, err := meta.ReadSnapshotIDs(context.Background(), e.c.cli, e.c.layout); err != nil || len(ids) != 0 {
		t.Fatalf("snapshot records left: %v, %v", ids, err)
	}
	for _, w := range live() {
		w.deleteTable()
	}
	w0.sweep()
	if got := ssts(t, filepath.Join(e.root, "tables")); len(got) != 0 {
		t.Fatalf("with every table deleted the storage holds %v", got)
	}
}
