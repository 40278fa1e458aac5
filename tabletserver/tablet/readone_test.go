package tablet

import (
	"math/rand"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
)

// TestReadOneMatchesAssembleFamily: the scan's shortcut for a family with
// one entry in the row says "visible" exactly when assembleFamily in
// modeRead emits that entry, for random entries (every kind, sequence
// numbers around the snapshot, old and new timestamps) under random GC
// policies and value types; it declines only tombstones and aggregates.
func TestReadOneMatchesAssembleFamily(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	const now = int64(1_000_000_000_000)
	kinds := []cell.Kind{cell.KindSet, cell.KindSet, cell.KindDeleteColumn, cell.KindDeleteFamily}
	for i := 0; i < 20000; i++ {
		f := families.Family{Name: "f", ValueType: families.ValueType(rng.Intn(4))}
		switch rng.Intn(4) {
		case 1:
			f.MaxVersions = 1 + rng.Intn(3)
		case 2:
			f.TTL = time.Duration(1+rng.Intn(1000)) * time.Second
		case 3:
			f.MaxVersions, f.TTL, f.GC = 1, time.Duration(1+rng.Intn(1000))*time.Second, families.GCMode(rng.Intn(2))
		}
		p := f.Policy(now)
		agg := aggregation{vt: f.ValueType}
		k := cell.Key{Row: []byte("r"), Kind: kinds[rng.Intn(len(kinds))], Seq: uint64(1 + rng.Intn(20))}
		var value []byte
		switch k.Kind {
		case cell.KindSet:
			k.Qualifier = []byte("q")
			k.Timestamp = now - rng.Int63n(2000)*int64(time.Second/time.Microsecond)
			value = make([]byte, 8)
		case cell.KindDeleteColumn:
			k.Qualifier = []byte("q")
			value = cell.AppendDeleteRange(nil, 0, 0)
		}
		snap := uint64(rng.Intn(22))
		e := rawEntry{key: k, value: value}
		emitted := false
		assembleFamily([]rawEntry{e}, snap, p, agg, modeRead, func(*rawEntry) { emitted = true })
		simple, visible := readOne(&e, snap, &p, agg)
		if want := k.Kind == cell.KindSet && !f.ValueType.IsAggregate(); simple != want {
			t.Fatalf("entry %+v, value type %v: readOne took it = %v, want %v", k, f.ValueType, simple, want)
		}
		if simple && visible != emitted {
			t.Fatalf("entry %+v, snapshot %d, family %+v: readOne says visible = %v, assembleFamily emitted = %v", k, snap, f, visible, emitted)
		}
	}
}
