package tablet

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/rowfilter"
	"github.com/tabuladb/tabula/sharedlog"
	"github.com/tabuladb/tabula/sstable"
	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/wal"
)

var (
	modelSeed = flag.Int64("model.seed", 0, "seed of TestModelRandomized (0 = three random seeds); also env TABULA_MODEL_SEED")
	modelOps  = flag.Int("model.ops", 1500, "operations per seed of TestModelRandomized")
)

const (
	modelRows   = 30
	modelMinute = int64(60_000_000) // µs
	modelT0     = int64(1_700_000_000_000_000)
)

var modelQualifiers = []string{"", "q0", "q1", "q2", "q3"}

// TestModelRandomized applies random operations to the engine and to the
// reference model of model_ref_test.go and compares their reads. The
// engine side runs with every background goroutine off and a fake clock,
// so a seed replays exactly: go test -run TestModelRandomized -model.seed N.
func TestModelRandomized(t *testing.T) {
	seeds := []int64{time.Now().UnixNano(), time.Now().UnixNano() + 1, time.Now().UnixNano() + 2}
	if s, err := strconv.ParseInt(os.Getenv("TABULA_MODEL_SEED"), 10, 64); err == nil && s != 0 {
		seeds = []int64{s}
	}
	if *modelSeed != 0 {
		seeds = []int64{*modelSeed}
	}
	ops := *modelOps
	if testing.Short() && ops > 500 {
		ops = 500
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			runModel(t, seed, ops, vfs.Default, t.TempDir(), false)
		})
	}
}

// TestModelRandomizedSharedLog runs the model test with every tablet on one
// shared commit log, as a tablet server runs them, and with server
// "crashes": every tablet closed without a flush, the log abandoned, and
// the tablets reopened at a new epoch on a new log, replaying the old one.
func TestModelRandomizedSharedLog(t *testing.T) {
	seed := time.Now().UnixNano()
	if *modelSeed != 0 {
		seed = *modelSeed
	}
	ops := *modelOps
	if testing.Short() && ops > 500 {
		ops = 500
	}
	runModel(t, seed, ops, vfs.Default, t.TempDir(), true)
}

// TestModelRandomizedOnObjectStore runs the model test with the tablets on
// an object store (SeaweedFS through vfs/s3fs): flushes, compactions,
// splits and reopens must read the same as on a disk.
func TestModelRandomizedOnObjectStore(t *testing.T) {
	fsys := startObjectStore(t)
	seed := time.Now().UnixNano()
	if *modelSeed != 0 {
		seed = *modelSeed
	}
	ops := min(*modelOps, 1000)
	runModel(t, seed, ops, fsys, "/model", true)
}

func runModel(t *testing.T, seed int64, ops int, fsys vfs.FS, root string, shared bool) {
	t.Logf("seed %d (replay with -model.seed %d)", seed, seed)
	r := newModelRun(t, seed, fsys, root, shared)
	defer r.closeAll()
	for i := 0; i < ops; i++ {
		r.step(i)
		if i%10 == 9 {
			r.verify()
		}
	}
	r.verify()
	t.Logf("operations: %v; %d tablets at the end", r.counts, len(r.tablets))
}

type modelTablet struct {
	tb         *Tablet
	dir        string
	start, end []byte
}

type modelRun struct {
	t       *testing.T
	seed    int64
	rng     *rand.Rand
	clock   *fakeClock
	cache   *sstable.Cache
	model   *refModel
	fams    []families.Family
	tablets []*modelTablet // ascending, covering every row
	root    string
	fs      vfs.FS
	ndirs   int
	ops     []string
	nval    int
	counts  map[string]int // operations done, by kind
	// With a shared log every tablet writes to log, at epoch; a crash
	// moves them all to a new log at the next epoch.
	log   *sharedlog.Log
	epoch int64
}

func newModelRun(t *testing.T, seed int64, fsys vfs.FS, root string, shared bool) *modelRun {
	r := &modelRun{t: t, seed: seed, rng: rand.New(rand.NewSource(seed)), clock: &fakeClock{},
		cache: sstable.NewCache(1 << 20), root: root, fs: fsys, counts: map[string]int{}}
	if shared {
		r.newLog()
	}
	r.clock.now.Store(modelT0)
	r.fams = []families.Family{
		{Name: "a", Compression: families.CompressionSnappy, Bloom: families.BloomRow, BlockSize: families.MinBlockSize},
		{Name: "b", MaxVersions: 2, TTL: 30 * time.Minute, GC: families.GCIntersection, Compression: families.CompressionZstd, Bloom: families.BloomRowColumn},
		{Name: "c", MaxVersions: 3},
		{Name: "d", GCRule: families.UnionRule(families.MaxVersionsRule(3),
			families.IntersectionRule(families.MaxAgeRule(30*time.Minute), families.MaxVersionsRule(1)))},
		{Name: "e", GCRule: families.UnionRule(families.MaxAgeRule(60 * time.Minute))},
		// Aggregate families: their types never change (setFamilies
		// leaves them alone), nor their TTL (see setFamilies).
		{Name: "m", ValueType: families.Min, Compression: families.CompressionSnappy},
		{Name: "s", ValueType: families.Sum, MaxVersions: 2, BlockSize: families.MinBlockSize},
		{Name: "x", ValueType: families.Max, TTL: 30 * time.Minute, Bloom: families.BloomRowColumn},
	}
	r.model = newRefModel(r.fams)
	r.tablets = []*modelTablet{{dir: r.newDir()}}
	r.open(r.tablets[0])
	return r
}

func (r *modelRun) newDir() string {
	r.ndirs++
	return filepath.Join(r.root, fmt.Sprintf("t%d", r.ndirs))
}

func (r *modelRun) now() int64 { return r.clock.Now() }

// newLog starts a new shared log at the next epoch, as a restarted server
// would.
func (r *modelRun) newLog() {
	r.epoch++
	l, err := sharedlog.Open(sharedlog.Options{FS: r.fs, Root: r.root, Name: fmt.Sprintf("server-%d", r.epoch), SyncMode: wal.SyncNone,
		SegmentSize: 64 << 10})
	if err != nil {
		r.fail("sharedlog.Open: %v", err)
	}
	r.log = l
}

// crash closes every tablet without a flush and abandons the shared log;
// the tablets reopen at the next epoch on a new log and replay the old one.
func (r *modelRun) crash(i int) {
	r.logf("%d: crash (epoch %d -> %d)", i, r.epoch, r.epoch+1)
	for _, mt := range r.tablets {
		if err := mt.tb.Close(); err != nil {
			r.fail("Close(%s): %v", mt.dir, err)
		}
		mt.tb = nil
	}
	if err := r.log.Close(); err != nil {
		r.fail("closing the shared log: %v", err)
	}
	r.newLog()
	for _, mt := range r.tablets {
		r.open(mt)
	}
}

func (r *modelRun) open(mt *modelTablet) {
	var epoch int64
	if r.log != nil {
		epoch = r.epoch
	}
	tb, err := Open(Options{Dir: mt.dir, FS: r.fs, Create: true, Families: r.fams, Start: mt.start, End: mt.end, SyncMode: wal.SyncNone,
		DisableBackgroundWork: true, Clock: r.clock.Now, Cache: r.cache, L0Trigger: 3,
		Log: r.log, Name: filepath.Base(mt.dir), Epoch: epoch})
	if err != nil {
		r.fail("Open(%s): %v", mt.dir, err)
	}
	mt.tb = tb
	start, end := tb.Range()
	if string(start) != string(mt.start) || string(end) != string(mt.end) {
		r.fail("Open(%s): range [%q, %q), want [%q, %q)", mt.dir, start, end, mt.start, mt.end)
	}
}

func (r *modelRun) closeAll() {
	for _, mt := range r.tablets {
		if mt.tb != nil {
			if err := mt.tb.Close(); err != nil {
				r.t.Errorf("Close(%s): %v", mt.dir, err)
			}
		}
	}
	if r.log != nil {
		if err := r.log.Close(); err != nil {
			r.t.Errorf("closing the shared log: %v", err)
		}
	}
}

// fail reports a mismatch with the tail of the operation log.
func (r *modelRun) fail(format string, args ...any) {
	r.t.Helper()
	tail := r.ops
	if len(tail) > 40 {
		tail = tail[len(tail)-40:]
	}
	r.t.Fatalf("seed %d: %s\nlast operations (oldest first):\n  %s", r.seed, fmt.Sprintf(format, args...), strings.Join(tail, "\n  "))
}

func (r *modelRun) logf(format string, args ...any) {
	op := fmt.Sprintf(format, args...)
	r.ops = append(r.ops, op)
	if f := strings.Fields(op); len(f) > 1 {
		r.counts[f[1]]++
	}
}

func (r *modelRun) route(row string) *modelTablet {
	for _, mt := range r.tablets {
		if inRowRange([]byte(row), mt.start, mt.end) {
			return mt
		}
	}
	r.fail("no tablet holds row %q", row)
	return nil
}

func (r *modelRun) randRow() string { return fmt.Sprintf("r%02d", r.rng.Intn(modelRows)) }

func (r *modelRun) randFamily() string { return r.fams[r.rng.Intn(len(r.fams))].Name }

// randBytesFamily and randAggregateFamily return a family of that kind.
func (r *modelRun) randBytesFamily() string { return r.randFamilyOf(false) }

func (r *modelRun) randAggregateFamily() string { return r.randFamilyOf(true) }

func (r *modelRun) randFamilyOf(aggregate bool) string {
	var names []string
	for _, f := range r.fams {
		if f.ValueType.IsAggregate() == aggregate {
			names = append(names, f.Name)
		}
	}
	return names[r.rng.Intn(len(names))]
}

func (r *modelRun) isAggregate(fam string) bool {
	for _, f := range r.fams {
		if f.Name == fam {
			return f.ValueType.IsAggregate()
		}
	}
	return false
}

// randAdd returns an AddToCell or MergeToCell of a small (sometimes huge)
// input into an aggregate family.
func (r *modelRun) randAdd() cell.Mutation {
	kind := cell.AddToCell
	if r.rng.Intn(3) == 0 {
		kind = cell.MergeToCell
	}
	n := int64(r.rng.Intn(21) - 10)
	if r.rng.Intn(20) == 0 {
		n = 1<<63 - 1 - int64(r.rng.Intn(3)) // sums wrap
	}
	// Few columns and timestamps, so that inputs meet in one cell.
	ts := r.now() - int64(r.rng.Intn(4))*modelMinute
	if r.rng.Intn(10) == 0 {
		ts = int64(1+r.rng.Intn(3)) * 1000
	}
	return cell.Mutation{Kind: kind, Family: r.randAggregateFamily(), Qualifier: []byte(modelQualifiers[r.rng.Intn(3)]), Timestamp: ts,
		Value: cell.AggregateInput(n)}
}

func (r *modelRun) randQualifier() string { return modelQualifiers[r.rng.Intn(len(modelQualifiers))] }

// randTimestamp returns an explicit timestamp: mostly around the clock on
// a minute grid (so writes collide), sometimes very old.
func (r *modelRun) randTimestamp() int64 {
	if r.rng.Intn(10) == 0 {
		return int64(1+r.rng.Intn(3)) * 1000
	}
	return r.now() + int64(r.rng.Intn(40)-36)*modelMinute
}

func (r *modelRun) randValue() []byte {
	switch r.rng.Intn(12) {
	case 0:
		return nil
	case 1, 2:
		return []byte{0, 0, 0, 0, 0, 0, 0, byte(r.rng.Intn(5))}
	}
	r.nval++
	return []byte(fmt.Sprintf("v%d", r.nval))
}

func (r *modelRun) randSet() cell.Mutation {
	ts := cell.ServerTimestamp
	if r.rng.Intn(6) != 0 {
		ts = r.randTimestamp()
	}
	return cell.Mutation{Kind: cell.SetCell, Family: r.randBytesFamily(), Qualifier: []byte(r.randQualifier()), Timestamp: ts, Value: r.randValue()}
}

func (r *modelRun) randDeleteColumn() cell.Mutation {
	m := cell.Mutation{Kind: cell.DeleteColumn, Family: r.randFamily(), Qualifier: []byte(r.randQualifier())}
	if r.rng.Intn(2) == 0 {
		m.TimeStart = r.randTimestamp()
		if r.rng.Intn(3) != 0 {
			m.TimeEnd = m.TimeStart + int64(1+r.rng.Intn(10))*modelMinute
		}
	}
	return m
}

func (r *modelRun) randMutation() cell.Mutation {
	switch n := r.rng.Intn(20); {
	case n < 9:
		return r.randSet()
	case n < 13:
		return r.randAdd()
	case n < 17:
		return r.randDeleteColumn()
	case n < 19:
		return cell.Mutation{Kind: cell.DeleteFamily, Family: r.randFamily()}
	default:
		return cell.Mutation{Kind: cell.DeleteRow}
	}
}

func (r *modelRun) randMutations(min int) []cell.Mutation {
	n := min + r.rng.Intn(4)
	muts := make([]cell.Mutation, n)
	for i := range muts {
		muts[i] = r.randMutation()
		// Inputs to one aggregate cell in one request must all count,
		// and a delete between them must split them.
		if k := muts[i].Kind; (k == cell.AddToCell || k == cell.MergeToCell || k == cell.DeleteColumn) && i > 0 && r.rng.Intn(2) == 0 {
			for j := i - 1; j >= 0; j-- {
				if p := muts[j]; p.Kind == cell.AddToCell || p.Kind == cell.MergeToCell {
					muts[i].Family, muts[i].Qualifier = p.Family, p.Qualifier
					if k != cell.DeleteColumn {
						muts[i].Timestamp = p.Timestamp
					} else if muts[i].TimeStart != 0 && r.rng.Intn(2) == 0 {
						muts[i].TimeStart, muts[i].TimeEnd = p.Timestamp, p.Timestamp+1
					}
					break
				}
			}
		}
	}
	return muts
}

func fmtMuts(muts []cell.Mutation) string {
	var parts []string
	for _, m := range muts {
		switch m.Kind {
		case cell.SetCell:
			parts = append(parts, fmt.Sprintf("set %s:%s@%s=%q", m.Family, m.Qualifier, fmtTs(m.Timestamp), m.Value))
		case cell.AddToCell, cell.MergeToCell:
			n, _ := families.DecodeAggregate(m.Value)
			parts = append(parts, fmt.Sprintf("%v %s:%s@%s %d", m.Kind, m.Family, m.Qualifier, fmtTs(m.Timestamp), n))
		case cell.DeleteColumn:
			parts = append(parts, fmt.Sprintf("delcol %s:%s[%s,%s)", m.Family, m.Qualifier, fmtTs(m.TimeStart), fmtTs(m.TimeEnd)))
		case cell.DeleteFamily:
			parts = append(parts, "delfam "+m.Family)
		case cell.DeleteRow:
			parts = append(parts, "delrow")
		}
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// fmtTs prints timestamps relative to modelT0 in minutes where they fall
// on the grid.
func fmtTs(ts int64) string {
	if ts == cell.ServerTimestamp {
		return "server"
	}
	if ts >= modelT0/2 && (ts-modelT0)%modelMinute == 0 {
		return fmt.Sprintf("T%+dm", (ts-modelT0)/modelMinute)
	}
	return strconv.FormatInt(ts, 10)
}

// randFilter returns a random read filter and its model twin; nil when
// the read takes no filter.
func (r *modelRun) randFilter() (*rowfilter.Filter, *refFilter) {
	if r.rng.Intn(4) == 0 {
		return nil, nil
	}
	rf := &refFilter{}
	var chain []*rowfilter.Filter
	if r.rng.Intn(3) == 0 {
		rf.family = r.randFamily()
		chain = append(chain, rowfilter.Family(rf.family))
	}
	if r.rng.Intn(3) == 0 {
		rf.qRange = true
		rf.qStart = []byte(r.randQualifier())
		if r.rng.Intn(3) != 0 {
			rf.qEnd = []byte(r.randQualifier() + "~")
		}
		chain = append(chain, rowfilter.QualifierRange("", rf.qStart, rf.qEnd))
	}
	if r.rng.Intn(3) == 0 {
		rf.tsRange = true
		rf.tsStart = r.randTimestamp()
		if r.rng.Intn(2) == 0 {
			rf.tsEnd = rf.tsStart + int64(1+r.rng.Intn(20))*modelMinute
		}
		chain = append(chain, rowfilter.TimestampRange(rf.tsStart, rf.tsEnd))
	}
	if r.rng.Intn(5) == 0 {
		rf.valueRegex = fmt.Sprintf("v%d.*", 1+r.rng.Intn(9))
		chain = append(chain, rowfilter.ValueRegex(rf.valueRegex))
	}
	if r.rng.Intn(3) == 0 {
		rf.perColumn = 1 + r.rng.Intn(2)
		chain = append(chain, rowfilter.CellsPerColumnLimit(rf.perColumn))
	}
	if r.rng.Intn(6) == 0 {
		rf.label = fmt.Sprintf("l%d", r.rng.Intn(3))
		chain = append(chain, rowfilter.Label(rf.label))
	}
	f := rowfilter.Chain(chain...)
	if r.rng.Intn(6) == 0 {
		// A sink reads around every restriction of the chain.
		rf.sinkFamily = r.randFamily()
		f = rowfilter.Interleave(f, rowfilter.Chain(rowfilter.Family(rf.sinkFamily), rowfilter.Label("sunk"), rowfilter.Sink()))
	}
	return f, rf
}

func (f *refFilter) String() string {
	if f == nil {
		return "nil"
	}
	return fmt.Sprintf("{fam=%q q=%v[%q,%q) ts=%v[%s,%s) re=%q perCol=%d label=%q sink=%q}", f.family, f.qRange, f.qStart, f.qEnd,
		f.tsRange, fmtTs(f.tsStart), fmtTs(f.tsEnd), f.valueRegex, f.perColumn, f.label, f.sinkFamily)
}

// step runs one random operation on the engine and the model.
func (r *modelRun) step(i int) {
	ctx := bg
	switch n := r.rng.Intn(100); {
	case n < 18: // one set
		row, muts := r.randRow(), []cell.Mutation{r.randSet()}
		r.apply(i, row, muts)
	case n < 29: // one AddToCell or MergeToCell
		row, muts := r.randRow(), []cell.Mutation{r.randAdd()}
		r.apply(i, row, muts)
	case n < 30: // a write that does not fit its family's value type
		row := r.randRow()
		m := r.randSet()
		if r.rng.Intn(2) == 0 {
			m.Family = r.randAggregateFamily()
		} else {
			m = r.randAdd()
			m.Family = r.randBytesFamily()
		}
		muts := append(r.randMutations(0), m)
		r.logf("%d: refused apply %s %s", i, row, fmtMuts(muts))
		if err := r.route(row).tb.Apply(ctx, []byte(row), muts); !errors.Is(err, cell.ErrInvalid) {
			r.fail("Apply(%s, %s) = %v, want an error wrapping cell.ErrInvalid", row, fmtMuts(muts), err)
		}
	case n < 45: // several mutations at once
		row, muts := r.randRow(), r.randMutations(2)
		r.apply(i, row, muts)
	case n < 51:
		r.apply(i, r.randRow(), []cell.Mutation{r.randDeleteColumn()})
	case n < 54:
		r.apply(i, r.randRow(), []cell.Mutation{{Kind: cell.DeleteFamily, Family: r.randFamily()}})
	case n < 56:
		r.apply(i, r.randRow(), []cell.Mutation{{Kind: cell.DeleteRow}})
	case n < 63: // CheckAndMutate
		row := r.randRow()
		pred, rf := r.randFilter()
		var onTrue, onFalse []cell.Mutation
		if r.rng.Intn(4) != 0 {
			onTrue = r.randMutations(1)
		}
		if r.rng.Intn(4) != 0 {
			onFalse = r.randMutations(1)
		}
		r.logf("%d: checkAndMutate %s pred=%v true=%s false=%s", i, row, rf, fmtMuts(onTrue), fmtMuts(onFalse))
		cur := r.model.read(row, r.now())
		if rf != nil {
			cur = rf.apply(cur)
		}
		want := len(cur) > 0
		got, err := r.route(row).tb.CheckAndMutate(ctx, []byte(row), pred, onTrue, onFalse)
		if err != nil {
			r.fail("CheckAndMutate: %v", err)
		}
		if got != want {
			r.fail("CheckAndMutate(%s) matched=%v, model says %v", row, got, want)
		}
		muts := onFalse
		if want {
			muts = onTrue
		}
		if len(muts) > 0 {
			r.model.apply(row, muts, r.now())
		}
	case n < 70: // ReadModifyWrite
		row := r.randRow()
		rules := make([]cell.ReadModifyWriteRule, 1+r.rng.Intn(2))
		var desc []string
		for j := range rules {
			rl := cell.ReadModifyWriteRule{Family: r.randFamily(), Qualifier: []byte(r.randQualifier())}
			if r.rng.Intn(2) == 0 {
				rl.Kind, rl.IncrementAmount = cell.Increment, int64(r.rng.Intn(11)-5)
				desc = append(desc, fmt.Sprintf("inc %s:%s %+d", rl.Family, rl.Qualifier, rl.IncrementAmount))
			} else {
				rl.Kind, rl.AppendValue = cell.Append, []byte(fmt.Sprintf("+%d", r.rng.Intn(10)))
				desc = append(desc, fmt.Sprintf("append %s:%s %q", rl.Family, rl.Qualifier, rl.AppendValue))
			}
			rules[j] = rl
		}
		r.logf("%d: readModifyWrite %s %s", i, row, strings.Join(desc, "; "))
		aggregate := false
		for _, rl := range rules {
			aggregate = aggregate || r.isAggregate(rl.Family)
		}
		if aggregate {
			if _, err := r.route(row).tb.ReadModifyWrite(ctx, []byte(row), rules); !errors.Is(err, cell.ErrInvalid) {
				r.fail("ReadModifyWrite(%s) on an aggregate family = %v, want an error wrapping cell.ErrInvalid", row, err)
			}
			return
		}
		want, ok := r.model.rmw(row, rules, r.now())
		got, err := r.route(row).tb.ReadModifyWrite(ctx, []byte(row), rules)
		if !ok {
			if !errors.Is(err, cell.ErrInvalid) {
				r.fail("ReadModifyWrite(%s) = %v, want an error wrapping cell.ErrInvalid (increment of a non-8-byte value)", row, err)
			}
			return
		}
		if err != nil {
			r.fail("ReadModifyWrite(%s): %v", row, err)
		}
		if render(got) != render(want) {
			r.fail("ReadModifyWrite(%s) returned\n  %s\nmodel says\n  %s", row, render(got), render(want))
		}
	case n < 74:
		mt := r.tablets[r.rng.Intn(len(r.tablets))]
		r.logf("%d: flush %s", i, mt.dir)
		if err := mt.tb.Flush(ctx); err != nil {
			r.fail("Flush: %v", err)
		}
	case n < 77:
		r.compact(i, r.tablets[r.rng.Intn(len(r.tablets))], r.rng.Intn(3) == 0)
	case n < 78 && r.log != nil && r.rng.Intn(2) == 0:
		r.crash(i)
	case n < 78:
		mt := r.tablets[r.rng.Intn(len(r.tablets))]
		r.logf("%d: reopen %s", i, mt.dir)
		if err := mt.tb.Close(); err != nil {
			r.fail("Close: %v", err)
		}
		mt.tb = nil
		r.open(mt)
	case n < 79:
		r.split(i)
	case n < 81:
		r.setFamilies(i)
	case n < 84:
		r.snapshotRead(i)
	case n < 85: // rare: a drop empties rows the other operations test
		r.dropRange(i)
	default:
		d := int64(r.rng.Intn(6)) * modelMinute
		r.logf("%d: clock += %dm", i, d/modelMinute)
		r.clock.now.Add(d)
	}
}

func (r *modelRun) apply(i int, row string, muts []cell.Mutation) {
	r.logf("%d: apply %s %s @%s", i, row, fmtMuts(muts), fmtTs(r.now()))
	if err := r.route(row).tb.Apply(bg, []byte(row), muts); err != nil {
		r.fail("Apply(%s, %s): %v", row, fmtMuts(muts), err)
	}
	r.model.apply(row, muts, r.now())
}

// compact flushes (so the compaction sees every write, as the model's GC
// assumes) and compacts; each family left with at most one SSTable went
// through a major compaction, which the model mirrors.
func (r *modelRun) compact(i int, mt *modelTablet, major bool) {
	r.logf("%d: flush+compact(major=%v) %s @%s", i, major, mt.dir, fmtTs(r.now()))
	if err := mt.tb.Flush(bg); err != nil {
		r.fail("Flush: %v", err)
	}
	if err := mt.tb.Compact(bg, major); err != nil {
		r.fail("Compact(%v): %v", major, err)
	}
	st := mt.tb.Stats()
	for _, f := range r.fams {
		fs := st.Families[f.Name]
		if major && fs.SSTables > 1 {
			r.fail("after a major compaction family %s has %d SSTables", f.Name, fs.SSTables)
		}
		if major && fs.Tombstones > 0 {
			r.fail("after a major compaction family %s has %d tombstones", f.Name, fs.Tombstones)
		}
		if fs.SSTables <= 1 {
			r.model.gc(f.Name, mt.start, mt.end, r.now())
		}
	}
}

func (r *modelRun) split(i int) {
	// Spread the splits over the run, so that they find data.
	if len(r.tablets) >= 4 || i < len(r.tablets)*(*modelOps)/4 {
		return
	}
	k := r.rng.Intn(len(r.tablets))
	mt := r.tablets[k]
	var cands []string
	for j := 1; j < modelRows; j++ {
		row := fmt.Sprintf("r%02d", j)
		if (mt.start == nil || row > string(mt.start)) && (mt.end == nil || row < string(mt.end)) {
			cands = append(cands, row)
		}
	}
	if len(cands) == 0 {
		return
	}
	at := cands[r.rng.Intn(len(cands))]
	left := &modelTablet{dir: r.newDir(), start: mt.start, end: []byte(at)}
	right := &modelTablet{dir: r.newDir(), start: []byte(at), end: mt.end}
	r.logf("%d: split %s at %s into %s, %s", i, mt.dir, at, left.dir, right.dir)
	if err := mt.tb.Split(bg, []byte(at), left.dir, right.dir); err != nil {
		r.fail("Split: %v", err)
	}
	if err := mt.tb.Apply(bg, []byte(at), []cell.Mutation{r.randSet()}); !errors.Is(err, ErrClosed) {
		r.fail("Apply on a split parent = %v, want ErrClosed", err)
	}
	mt.tb = nil
	r.open(left)
	r.open(right)
	r.tablets = append(r.tablets[:k], append([]*modelTablet{left, right}, r.tablets[k+1:]...)...)
}

// setFamilies changes the GC policies. Family a (union) never gets a longer
// TTL, family b (intersection) always keeps a version limit, family d (a
// random nested rule) never condemns a column's newest version, and family
// e (a random nested rule in a union with age=60m) does past 60 minutes
// exactly (rank0Age): then a whole SSTable the engine drops for its TTL
// without reading it holds only cells that stay condemned forever, and the
// model need not know which files were dropped.
func (r *modelRun) setFamilies(i int) {
	ttls := []time.Duration{0, 60 * time.Minute, 30 * time.Minute, 15 * time.Minute}
	nf := make([]families.Family, len(r.fams))
	copy(nf, r.fams)
	for j := range nf {
		f := &nf[j]
		switch f.Name {
		case "a":
			f.MaxVersions = r.rng.Intn(4)
			if t := ttls[1+r.rng.Intn(len(ttls)-1)]; f.TTL == 0 || t < f.TTL {
				if r.rng.Intn(2) == 0 {
					f.TTL = t
				}
			}
		case "b":
			f.MaxVersions = 1 + r.rng.Intn(3)
			f.TTL = ttls[r.rng.Intn(len(ttls))]
		case "c":
			f.MaxVersions = r.rng.Intn(4)
		case "d":
			f.GCRule = r.randRuleKeepingNewest(4)
		case "e":
			if rank0Age(f.GCRule) != 60*time.Minute {
				r.fail("family e condemns newest versions past %v", rank0Age(f.GCRule))
			}
			f.GCRule = families.UnionRule(families.MaxAgeRule(60*time.Minute), r.randRuleKeepingNewest(4))
		}
	}
	var desc []string
	for _, f := range nf {
		if f.GCRule != nil {
			desc = append(desc, fmt.Sprintf("%s:gc=%s", f.Name, f.GCRule))
			continue
		}
		desc = append(desc, fmt.Sprintf("%s:v=%d,ttl=%v,%v", f.Name, f.MaxVersions, f.TTL, f.GC))
	}
	r.logf("%d: setFamilies %s", i, strings.Join(desc, " "))
	for _, mt := range r.tablets {
		if err := mt.tb.SetFamilies(nf); err != nil {
			r.fail("SetFamilies: %v", err)
		}
	}
	r.fams = nf
	r.model.setFamilies(nf)
}

// randRule returns a random nested GC rule of at most depth levels, with
// ages and version counts that meet often.
func (r *modelRun) randRule(depth int) *families.GCRule {
	k := r.rng.Intn(4)
	if depth <= 1 {
		k = r.rng.Intn(2)
	}
	switch k {
	case 0:
		return families.MaxVersionsRule(1 + r.rng.Intn(3))
	case 1:
		return families.MaxAgeRule(time.Duration(15<<r.rng.Intn(3)) * time.Minute)
	}
	rule := &families.GCRule{Kind: families.RuleUnion}
	if k == 3 {
		rule.Kind = families.RuleIntersection
	}
	for n := r.rng.Intn(4); n > 0; n-- {
		rule.Rules = append(rule.Rules, r.randRule(depth-1))
	}
	return rule
}

// randRuleKeepingNewest returns a random nested rule that never condemns
// a column's newest version: a version limit, a union of such rules, or an
// intersection of one with any rules.
func (r *modelRun) randRuleKeepingNewest(depth int) *families.GCRule {
	if depth <= 1 || r.rng.Intn(4) == 0 {
		return families.MaxVersionsRule(1 + r.rng.Intn(3))
	}
	if r.rng.Intn(2) == 0 {
		rule := families.UnionRule()
		for n := r.rng.Intn(3); n > 0; n-- {
			rule.Rules = append(rule.Rules, r.randRuleKeepingNewest(depth-1))
		}
		return rule
	}
	rule := families.IntersectionRule(r.randRuleKeepingNewest(depth - 1))
	for n := r.rng.Intn(3); n > 0; n-- {
		rule.Rules = append(rule.Rules, r.randRule(depth-1))
	}
	r.rng.Shuffle(len(rule.Rules), func(i, j int) { rule.Rules[i], rule.Rules[j] = rule.Rules[j], rule.Rules[i] })
	return rule
}

// rank0Age is the age past which a rule condemns even a column's newest
// version (what lets the engine drop whole files unread), or MaxInt64 when
// it never does.
func rank0Age(r *families.GCRule) time.Duration {
	switch r.Kind {
	case families.RuleMaxAge:
		return r.MaxAge
	case families.RuleUnion:
		a := time.Duration(math.MaxInt64)
		for _, c := range r.Rules {
			a = min(a, rank0Age(c))
		}
		return a
	case families.RuleIntersection:
		if len(r.Rules) == 0 {
			return math.MaxInt64
		}
		var a time.Duration
		for _, c := range r.Rules {
			a = max(a, rank0Age(c))
		}
		return a
	}
	return math.MaxInt64
}

// verify compares reads of random rows, a full scan and a filtered,
// limited range scan.
func (r *modelRun) verify() {
	now := r.now()
	for j := 0; j < 3; j++ {
		row := r.randRow()
		got, err := r.route(row).tb.ReadRow(bg, []byte(row), nil)
		if err != nil {
			r.fail("ReadRow(%s): %v", row, err)
		}
		if want := r.model.read(row, now); render(got) != render(want) {
			r.fail("ReadRow(%s) @%s\n  got  %s\n  want %s", row, fmtTs(now), render(got), render(want))
		}
	}
	{
		row := r.randRow()
		f, rf := r.randFilter()
		got, err := r.route(row).tb.ReadRow(bg, []byte(row), f)
		if err != nil {
			r.fail("ReadRow(%s, %v): %v", row, rf, err)
		}
		want := r.model.read(row, now)
		if rf != nil {
			want = rf.apply(want)
		}
		if render(got) != render(want) {
			r.fail("ReadRow(%s, filter %v) @%s\n  got  %s\n  want %s", row, rf, fmtTs(now), render(got), render(want))
		}
	}
	// A full scan, forward or reversed (the tablets from the last down).
	var got, want []string
	reverse := r.rng.Intn(2) == 0
	tablets := slices.Clone(r.tablets)
	if reverse {
		slices.Reverse(tablets)
	}
	for _, mt := range tablets {
		if s := scan(r.t, mt.tb, ReadOptions{Reverse: reverse}); s != "" {
			got = append(got, s)
		}
	}
	for _, row := range orderRows(r.model.rowKeys(nil, nil), reverse) {
		if cs := r.model.read(row, now); len(cs) > 0 {
			want = append(want, fmt.Sprintf("%s{%s}", row, render(cs)))
		}
	}
	if g, w := strings.Join(got, " "), strings.Join(want, " "); g != w {
		r.fail("full scan (reverse %v) @%s differs\n  got  %s\n  want %s", reverse, fmtTs(now), g, w)
	}

	// A filtered scan of one tablet over a random row range, with a limit.
	mt := r.tablets[r.rng.Intn(len(r.tablets))]
	f, rf := r.randFilter()
	opts := ReadOptions{Filter: f, Limit: int64(r.rng.Intn(4) * 3), Reverse: r.rng.Intn(2) == 0}
	lo, hi := []byte(nil), []byte(nil)
	if r.rng.Intn(2) == 0 {
		a, b := r.randRow(), r.randRow()
		if a > b {
			a, b = b, a
		}
		lo, hi = []byte(a), []byte(b+"\x00")
		opts.Ranges = []RowRange{{Start: lo, End: hi}}
	}
	g := scan(r.t, mt.tb, opts)
	want = want[:0]
	for _, row := range orderRows(r.model.rowKeys(mt.start, mt.end), opts.Reverse) {
		if !inRowRange([]byte(row), lo, hi) {
			continue
		}
		cs := r.model.read(row, now)
		if rf != nil {
			cs = rf.apply(cs)
		}
		if len(cs) > 0 && (opts.Limit == 0 || int64(len(want)) < opts.Limit) {
			want = append(want, fmt.Sprintf("%s{%s}", row, render(cs)))
		}
	}
	if w := strings.Join(want, " "); g != w {
		r.fail("scan (reverse %v) of %s range [%q, %q) filter %v limit %d @%s differs\n  got  %s\n  want %s", opts.Reverse, mt.dir, lo, hi, rf, opts.Limit, fmtTs(now), g, w)
	}
}

// orderRows returns rows (ascending) in the order of a read: reversed
// when reverse.
func orderRows(rows []string, reverse bool) []string {
	if reverse {
		rows = slices.Clone(rows)
		slices.Reverse(rows)
	}
	return rows
}

// snapshotRead opens an iterator, then writes (or flushes and compacts)
// under it, then drains it: it must show the state from before.
func (r *modelRun) snapshotRead(i int) {
	mt := r.tablets[r.rng.Intn(len(r.tablets))]
	now := r.now()
	reverse := r.rng.Intn(2) == 0
	var want []string
	for _, row := range orderRows(r.model.rowKeys(mt.start, mt.end), reverse) {
		if cs := r.model.read(row, now); len(cs) > 0 {
			want = append(want, fmt.Sprintf("%s{%s}", row, render(cs)))
		}
	}
	// Rows are rendered at the step that returns them, so the scan may
	// reuse its cells and recycle its blocks (ReuseCells) while the
	// change below compacts its files away.
	reuse := r.rng.Intn(2) == 0
	it, err := mt.tb.NewRowIterator(bg, ReadOptions{Reverse: reverse, ReuseCells: reuse})
	if err != nil {
		r.fail("NewRowIterator: %v", err)
	}
	r.logf("%d: snapshot-read %s (reverse %v, reuse cells %v)", i, mt.dir, reverse, reuse)
	// Read one row first, so the iterator is mid-way during the change.
	var got []string
	if it.Next() {
		got = append(got, fmt.Sprintf("%s{%s}", it.Row(), render(it.Cells())))
	}
	switch r.rng.Intn(3) {
	case 0:
		r.compact(i, mt, r.rng.Intn(2) == 0)
	default:
		for j := 0; j < 3; j++ {
			row := r.randRow()
			for !inRowRange([]byte(row), mt.start, mt.end) {
				row = r.randRow()
			}
			r.apply(i, row, r.randMutations(1))
		}
	}
	for it.Next() {
		got = append(got, fmt.Sprintf("%s{%s}", it.Row(), render(it.Cells())))
	}
	if err := it.Close(); err != nil {
		r.fail("iterate under changes: %v", err)
	}
	if g, w := strings.Join(got, " "), strings.Join(want, " "); g != w {
		r.fail("an iterator opened before the change saw\n  %s\nwant\n  %s", g, w)
	}
}

// dropRange drops a random row range (sometimes everything) from every
// tablet, as the master does for DropRowRange; the model forgets the rows.
func (r *modelRun) dropRange(i int) {
	var start, end []byte
	switch r.rng.Intn(8) {
	case 0: // everything
	case 1, 2: // a prefix: r0, r1, r2
		start = []byte(fmt.Sprintf("r%d", r.rng.Intn(3)))
		end = []byte{start[0], start[1] + 1}
	default:
		a, b := r.rng.Intn(modelRows), r.rng.Intn(modelRows+1)
		if a > b {
			a, b = b, a
		}
		start = []byte(fmt.Sprintf("r%02d", a))
		if b < modelRows && b > a {
			end = []byte(fmt.Sprintf("r%02d", b))
		}
	}
	r.logf("%d: dropRange [%q, %q)", i, start, end)
	for _, mt := range r.tablets {
		if err := mt.tb.DropRange(bg, start, end); err != nil {
			r.fail("DropRange(%s, %q, %q): %v", mt.dir, start, end, err)
		}
	}
	for _, row := range r.model.rowKeys(start, end) {
		delete(r.model.rows, row)
	}
}
