package tablet

import (
	"math/rand"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
)

// TestAssembleOneMatchesAssembleFamily: the shortcut for a family with one
// entry in the row says "emit" exactly when assembleFamily emits that
// entry, in every mode, for random entries (every kind, sequence numbers
// around the snapshot, old and new timestamps) under random GC policies and
// value types; it declines only tombstones and aggregates.
func TestAssembleOneMatchesAssembleFamily(t *testing.T) {
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
		mode := []assembleMode{modeRead, modeMerge, modeMajor}[rng.Intn(3)]
		emitted := false
		assembleFamily([]rawEntry{e}, snap, p, agg, mode, func(*rawEntry) { emitted = true })
		simple, visible := assembleOne(&e, snap, &p, agg, mode)
		if want := k.Kind == cell.KindSet && !f.ValueType.IsAggregate(); simple != want {
			t.Fatalf("entry %+v, value type %v: assembleOne took it = %v, want %v", k, f.ValueType, simple, want)
		}
		if simple && visible != emitted {
			t.Fatalf("entry %+v, snapshot %d, family %+v, mode %d: assembleOne says emit = %v, assembleFamily emitted = %v", k, snap, f, mode, visible, emitted)
		}
	}
}
