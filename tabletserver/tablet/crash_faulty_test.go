package tablet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/sharedlog"
	"github.com/tabuladb/tabula/sstable"
	"github.com/tabuladb/tabula/storepath"
	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/wal"
)

// The kill -9 crash test on a disk that fails: the child runs like a tablet
// server (several tablets on one shared commit log) over a vfs.Faulty that
// injects seeded random faults (a full disk, I/O errors, short writes) into
// the commit log, SSTables and manifests while it writes. A tablet that
// fails is closed and reopened at the next epoch, on a new shared log if
// the old one is poisoned, as a server does; now and then a healthy tablet
// is moved (flushed, closed, reopened a little later at the next epoch),
// and tablets pinning a large log's oldest segment are flushed. The parent
// kills the child at a random moment and reopens every tablet on the
// healthy disk.
//
// The child's output, one line per event (a pipe write of less than 4 KiB
// is atomic, so lines never interleave):
//
//	READY                          the tablets are open; writes start
//	ACK <row> <value>              Apply returned nil: the row must survive
//	FAIL <row> maybe|refused <err> Apply failed; refused (ErrFailed, ErrClosed, ErrResourceExhausted)
//	                               means nothing was applied: the row must be absent
//	FAULT <op> <path> <err>        a fault was injected
//	EPOCH <tablet> <epoch>         an open at epoch is about to start
//	OPEN <tablet> <epoch> <log>    it succeeded
//	OPENFAIL <tablet> <epoch> <err>
//	NEWLOG <name>                  a new shared log (the first, or after a poisoned one)
//	REOPEN <tablet>                a failed tablet is closed, to be reopened
//	MOVE <tablet> released=<bool> ...  a healthy tablet was flushed and closed

// Environment of the child process of TestCrashKillNineFaulty (its folder
// and round are crashDirEnv and crashRoundEnv).
const (
	crashFaultSeedEnv = "TABULA_CRASH_FAULT_SEED"
	crashEpochEnv     = "TABULA_CRASH_EPOCH" // the first epoch the child opens its tablets at
	crashTablets      = 3
)

// crashFaultyRow is the row key of writer w's n-th write in a round, to
// tablet tab (whose range is [t<tab>, t<tab+1>)).
func crashFaultyRow(tab, round, w, n int) string {
	return fmt.Sprintf("t%d-r%02d-w%d-%06d", tab, round, w, n)
}

// parseCrashFaultyRow is the inverse of crashFaultyRow.
func parseCrashFaultyRow(row string) (tab, round, w, n int, ok bool) {
	if _, err := fmt.Sscanf(row, "t%d-r%02d-w%d-%06d", &tab, &round, &w, &n); err != nil {
		return 0, 0, 0, 0, false
	}
	return tab, round, w, n, crashFaultyRow(tab, round, w, n) == row && tab >= 0 && tab < crashTablets && w >= 0 && w < crashWriters
}

// crashFaultyOptions are the options of tablet tab of the faulty crash
// test under root: crashOptions split by row range, named as a server
// names them.
func crashFaultyOptions(root string, tab int) Options {
	o := crashOptions(filepath.Join(root, "tables", "t", strconv.Itoa(tab)))
	o.Name = fmt.Sprintf("t/%d", tab)
	if tab > 0 {
		o.Start = []byte(fmt.Sprintf("t%d", tab))
	}
	if tab < crashTablets-1 {
		o.End = []byte(fmt.Sprintf("t%d", tab+1))
	}
	return o
}

// crashLogSegmentSize is the segment size of the child's shared logs:
// small, so that segments rotate (a fault can hit a segment's creation)
// and are deleted after flushes.
const crashLogSegmentSize = 32 << 10

// crashFaults injects the child's faults: each write-side operation on a
// commit log segment, an SSTable or a manifest fails with a small
// probability, with ENOSPC, EIO or (writes) a short write.
type crashFaults struct {
	out func(string)

	mu  sync.Mutex
	rng *rand.Rand
}

// crashFaultRate is the probability that op on path fails.
func crashFaultRate(op vfs.Op, path string) float64 {
	path = filepath.ToSlash(path)
	base := filepath.Base(path)
	inLogs := strings.Contains(path, "/"+storepath.LogsFolder+"/")
	switch {
	case inLogs && strings.HasSuffix(base, ".log"):
		switch op {
		case vfs.OpWrite, vfs.OpSync:
			return 1.0 / 600
		case vfs.OpCreate:
			return 1.0 / 20
		}
	case inLogs && op == vfs.OpSyncDir:
		return 1.0 / 20
	case strings.HasSuffix(base, ".sst"):
		switch op {
		case vfs.OpCreate, vfs.OpWrite, vfs.OpSync:
			return 1.0 / 60
		}
	case strings.HasPrefix(base, "MANIFEST") && strings.HasSuffix(base, ".tmp"):
		switch op {
		case vfs.OpCreate, vfs.OpWrite, vfs.OpSync:
			return 1.0 / 40
		}
	case strings.HasPrefix(base, "MANIFEST") && op == vfs.OpRename: // named by the new name
		return 1.0 / 40
	case op == vfs.OpSyncDir && strings.Contains(path, "/tables/"):
		return 1.0 / 40 // a tablet's folder (manifest saves) or a family's (SSTables)
	}
	return 0
}

func (f *crashFaults) inject(op vfs.Op, name string) error {
	p := crashFaultRate(op, name)
	if p == 0 {
		return nil
	}
	f.mu.Lock()
	hit := f.rng.Float64() < p
	kind, n := f.rng.Intn(3), 1+f.rng.Intn(200)
	f.mu.Unlock()
	if !hit {
		return nil
	}
	var err error
	switch {
	case kind == 0 && op == vfs.OpWrite:
		err = &vfs.ShortWrite{N: n, Err: vfs.NoSpace()}
	case kind == 1:
		err = fmt.Errorf("%w: %w", vfs.ErrInjected, syscall.EIO)
	default:
		err = vfs.NoSpace()
	}
	f.out(fmt.Sprintf("FAULT %s %s %v", op, name, err))
	return err
}

// crashServer is the child of TestCrashKillNineFaulty: a tablet server in
// miniature, its tablets on one shared log over a failing disk.
type crashServer struct {
	ctx   context.Context
	root  string
	round int
	fs    vfs.FS
	out   func(string)
	// Shared by the tablets, as on a server.
	cache  *sstable.Cache
	memory *MemoryBudget
	limit  *Limiter

	reopen chan crashReopen

	mu      sync.Mutex
	cond    *sync.Cond // broadcast when a tablet is (re)opened, and at the end
	log     *sharedlog.Log
	logs    []*sharedlog.Log // every log opened, closed at the end
	nextGen int
	slots   [crashTablets]crashSlot
}

// crashSlot is one tablet of the server.
type crashSlot struct {
	tb    *Tablet // nil while it is reopened
	gen   int     // identifies this incarnation in reopen requests
	epoch int64   // the last epoch an open was tried at
}

// crashReopen asks the server to reopen incarnation gen of a tablet.
type crashReopen struct{ tab, gen int }

// oneLine makes an error printable on one line of bounded length.
func oneLine(err error) string {
	s := strings.ReplaceAll(err.Error(), "\n", " | ")
	if len(s) > 1000 {
		s = s[:1000] + "..."
	}
	return s
}

// sharedLog returns the server's shared log, opening a new one first if
// there is none or it is poisoned.
func (s *crashServer) sharedLog() (*sharedlog.Log, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.log != nil && s.log.Err() == nil {
		return s.log, nil
	}
	// A new name per log, as a server uses a new one per incarnation.
	name := fmt.Sprintf("c%02d-%03d", s.round, len(s.logs))
	l, err := sharedlog.Open(sharedlog.Options{FS: s.fs, Root: s.root, Name: name,
		SyncMode: wal.SyncAlways, SegmentSize: crashLogSegmentSize,
		MaxBytes: 4 * crashLogSegmentSize, OnPressure: s.flush})
	if err != nil {
		// Its name is used up: the failed open may have left a segment.
		s.logs = append(s.logs, nil)
		return nil, err
	}
	s.logs = append(s.logs, l)
	s.log = l
	s.out("NEWLOG " + name)
	return l, nil
}

// flush flushes the tablets named, as a server does when its shared log
// grows large (sharedlog.Options.OnPressure).
func (s *crashServer) flush(names []string) {
	for _, name := range names {
		var tab int
		if _, err := fmt.Sscanf(name, "t/%d", &tab); err != nil || tab < 0 || tab >= crashTablets {
			continue
		}
		s.mu.Lock()
		tb := s.slots[tab].tb
		s.mu.Unlock()
		if tb != nil {
			_ = tb.Flush(s.ctx) // fails if it failed or was closed since
		}
	}
}

// open opens tablet tab at the next epoch, retrying until it succeeds or
// the child's context ends.
func (s *crashServer) open(tab int) error {
	for {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		l, err := s.sharedLog()
		if err != nil {
			s.out(fmt.Sprintf("OPENFAIL %d 0 new shared log: %s", tab, oneLine(err)))
			time.Sleep(5 * time.Millisecond)
			continue
		}
		s.mu.Lock()
		s.slots[tab].epoch++
		epoch := s.slots[tab].epoch
		s.nextGen++
		gen := s.nextGen
		s.mu.Unlock()
		// Printed before the open starts: the parent must check at a
		// higher epoch than any the child tried (a failed open can leave
		// files numbered by its epoch).
		s.out(fmt.Sprintf("EPOCH %d %d", tab, epoch))
		opts := crashFaultyOptions(s.root, tab)
		opts.Create = s.round == 0
		opts.FS, opts.Log, opts.Epoch = s.fs, l, epoch
		opts.Cache, opts.Memory, opts.Compactions = s.cache, s.memory, s.limit
		opts.OnFailure = func(error) {
			select { // must not block; writers ask again on their errors
			case s.reopen <- crashReopen{tab, gen}:
			default:
			}
		}
		tb, err := Open(opts)
		if err != nil {
			s.out(fmt.Sprintf("OPENFAIL %d %d %s", tab, epoch, oneLine(err)))
			time.Sleep(5 * time.Millisecond)
			continue
		}
		s.mu.Lock()
		s.slots[tab].tb, s.slots[tab].gen = tb, gen
		s.cond.Broadcast()
		s.mu.Unlock()
		s.out(fmt.Sprintf("OPEN %d %d %s", tab, epoch, l.Name()))
		return nil
	}
}

// tablet returns a tablet in service, its index and its incarnation:
// tablet want if it is in service, else another one (as a client's
// writes to a tablet that is being reopened or moved wait, while those to
// the others go on), waiting while none is; nil once the context ended.
func (s *crashServer) tablet(want int) (*Tablet, int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.ctx.Err() == nil {
		for i := range crashTablets {
			tab := (want + i) % crashTablets
			if tb := s.slots[tab].tb; tb != nil {
				return tb, tab, s.slots[tab].gen
			}
		}
		s.cond.Wait()
	}
	return nil, 0, 0
}

// take takes tablet tab out of service if it is still incarnation gen
// (any incarnation if gen is 0) and returns it.
func (s *crashServer) take(tab, gen int) *Tablet {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := &s.slots[tab]
	tb := sl.tb
	if tb == nil || gen != 0 && sl.gen != gen {
		return nil // already reopened
	}
	sl.tb = nil
	return tb
}

// reopener closes and reopens the tablets that failed, one at a time.
// Now and then it also moves a healthy tablet, as a server unloads a
// tablet that moves to another server and loads it again later: it
// flushes it, closes it (cleanly if the flush left nothing behind, which
// releases the shared log), waits a little and reopens it.
func (s *crashServer) reopener(rng *rand.Rand) {
	move := time.NewTimer(time.Duration(50+rng.Intn(300)) * time.Millisecond)
	defer move.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case r := <-s.reopen:
			tb := s.take(r.tab, r.gen)
			if tb == nil {
				continue
			}
			s.out(fmt.Sprintf("REOPEN %d", r.tab))
			_ = tb.Close() // it may report the failure
			if s.open(r.tab) != nil {
				return
			}
		case <-move.C:
			move.Reset(time.Duration(50+rng.Intn(300)) * time.Millisecond)
			tab := rng.Intn(crashTablets)
			tb := s.take(tab, 0)
			if tb == nil {
				continue
			}
			// Writers that took it before still write to it; Close
			// waits for them.
			ferr := tb.Flush(s.ctx)
			cerr := tb.Close()
			st, _, _, merr := manifest.LoadLatest(vfs.Default, crashFaultyOptions(s.root, tab).Dir)
			s.out(fmt.Sprintf("MOVE %d released=%v flush: %v; close: %v; manifest: %v", tab, merr == nil && st.Log == "", ferr, cerr, merr))
			time.Sleep(time.Duration(100+rng.Intn(400)) * time.Millisecond)
			if s.open(tab) != nil {
				return
			}
		}
	}
}

// write is writer w: it writes rows to random tablets until the context
// ends, and prints the outcome of each.
func (s *crashServer) write(w int, rng *rand.Rand) {
	for n := 0; s.ctx.Err() == nil; n++ {
		tb, tab, gen := s.tablet(rng.Intn(crashTablets))
		if tb == nil {
			return
		}
		row := crashFaultyRow(tab, s.round, w, n)
		muts := []cell.Mutation{
			{Kind: cell.SetCell, Family: "a", Qualifier: []byte("v"), Timestamp: int64(n + 1), Value: crashValue(row, "a")},
			{Kind: cell.SetCell, Family: "b", Qualifier: []byte("v"), Timestamp: int64(n + 1), Value: crashValue(row, "b")},
		}
		err := tb.Apply(s.ctx, []byte(row), muts)
		switch {
		case err == nil:
			s.out("ACK " + row + " " + string(crashValue(row, "a")))
		case s.ctx.Err() != nil:
			return // the outcome is unknown: the parent takes it as in flight
		case errors.Is(err, ErrClosed) || errors.Is(err, ErrFailed) && !errors.Is(err, ErrLogFailed) ||
			errors.Is(err, ErrResourceExhausted): // a full memtable whose flush failed (stall.go)
			s.out("FAIL " + row + " refused " + oneLine(err))
		default:
			s.out("FAIL " + row + " maybe " + oneLine(err))
		}
		if errors.Is(err, ErrFailed) || errors.Is(err, ErrLogFailed) {
			select {
			case s.reopen <- crashReopen{tab, gen}:
			case <-s.ctx.Done():
				return
			}
		}
	}
}

// TestCrashFaultyChild is the child process of TestCrashKillNineFaulty: it
// serves its tablets over a failing disk and writes until it is killed.
// It is skipped unless the parent set TABULA_CRASH_FAULT_SEED.
func TestCrashFaultyChild(t *testing.T) {
	seed, err := strconv.ParseInt(os.Getenv(crashFaultSeedEnv), 10, 64)
	if os.Getenv(crashFaultSeedEnv) == "" {
		t.Skip("only run as the child of TestCrashKillNineFaulty")
	}
	if err != nil {
		t.Fatalf("bad %s: %v", crashFaultSeedEnv, err)
	}
	root := os.Getenv(crashDirEnv)
	round, err := strconv.Atoi(os.Getenv(crashRoundEnv))
	if err != nil || root == "" {
		t.Fatalf("bad %s or %s: %v", crashDirEnv, crashRoundEnv, err)
	}
	epoch, err := strconv.ParseInt(os.Getenv(crashEpochEnv), 10, 64)
	if err != nil || epoch < 1 {
		t.Fatalf("bad %s: %v", crashEpochEnv, err)
	}
	var outMu sync.Mutex // for the race detector; the pipe keeps lines whole anyway
	out := func(line string) {
		outMu.Lock()
		defer outMu.Unlock()
		// One write per line, so a kill never leaves a torn line that
		// looks whole.
		if _, err := os.Stdout.Write([]byte(line + "\n")); err != nil {
			panic(err)
		}
	}
	faulty := vfs.NewFaulty(vfs.Default)
	faults := &crashFaults{out: out, rng: rand.New(rand.NewSource(seed))}
	faulty.Set(faults.inject)
	// The parent kills us long before this; the deadline only keeps an
	// orphan from running forever.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := &crashServer{ctx: ctx, root: root, round: round, fs: faulty, out: out,
		cache: sstable.NewCache(8 << 20), memory: NewMemoryBudget(64<<20, 128<<20), limit: NewLimiter(1),
		reopen: make(chan crashReopen, 4*crashTablets)}
	s.cond = sync.NewCond(&s.mu)
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer stop()
	for tab := range crashTablets {
		s.slots[tab].epoch = epoch - 1
		if err := s.open(tab); err != nil {
			t.Fatalf("child: opening tablet %d: %v", tab, err)
		}
	}
	out("READY")
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.reopener(rand.New(rand.NewSource(seed - 1)))
	}()
	for w := range crashWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.write(w, rand.New(rand.NewSource(seed+int64(w)+1)))
		}()
	}
	wg.Wait()
	faulty.Set(nil)
	for _, sl := range s.slots {
		if sl.tb != nil {
			_ = sl.tb.Close()
		}
	}
	for _, l := range s.logs {
		if l != nil {
			_ = l.Close()
		}
	}
}

// crashFaultyRun is what the parent of TestCrashKillNineFaulty knows of
// the children's writes, over all rounds.
type crashFaultyRun struct {
	acked   map[string]bool // Apply returned nil
	refused map[string]bool // Apply returned ErrFailed or ErrClosed: nothing applied
	// last is the highest write number each writer of each round printed
	// an outcome for; the write after it may have been in flight at the
	// kill, later ones were never attempted.
	last  map[[2]int]int
	epoch int64 // the highest epoch a tablet was opened at, or tried

	// Counts of one round.
	faults, maybe, refusedN, reopens, moves, openFails, logs int
	faultOps                                                 map[string]int // by operation and kind of file
}

// line takes one line of a child's output other than READY and ACK.
func (r *crashFaultyRun) line(round int) func(string) bool {
	return func(line string) bool {
		f := strings.Fields(line)
		if len(f) == 0 {
			return false
		}
		switch f[0] {
		case "FAULT":
			if len(f) < 3 {
				return false
			}
			r.faults++
			r.faultOps[f[1]+" "+crashFaultKind(f[2])]++
		case "FAIL":
			if len(f) < 3 {
				return false
			}
			_, rd, w, n, ok := parseCrashFaultyRow(f[1])
			if !ok || rd != round {
				return false
			}
			r.noteAttempt(rd, w, n)
			switch f[2] {
			case "refused":
				r.refused[f[1]] = true
				r.refusedN++
			case "maybe":
				r.maybe++
			default:
				return false
			}
		case "EPOCH":
			if len(f) != 3 {
				return false
			}
			e, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil {
				return false
			}
			r.epoch = max(r.epoch, e)
		case "OPEN":
		case "REOPEN":
			r.reopens++
		case "MOVE":
			r.moves++
		case "OPENFAIL":
			r.openFails++
		case "NEWLOG":
			r.logs++
		default:
			return false
		}
		return true
	}
}

// crashFaultKind names the kind of file a fault hit.
func crashFaultKind(path string) string {
	base := filepath.Base(path)
	switch {
	case strings.HasSuffix(base, ".log"):
		return "log-segment"
	case strings.Contains(filepath.ToSlash(path), "/"+storepath.LogsFolder+"/"):
		return "log-folder"
	case strings.HasSuffix(base, ".sst"):
		return "sstable"
	case strings.HasPrefix(base, "MANIFEST"):
		return "manifest"
	}
	return "folder"
}

func (r *crashFaultyRun) noteAttempt(round, w, n int) {
	k := [2]int{round, w}
	if last, ok := r.last[k]; !ok || n > last {
		r.last[k] = n
	}
}

// TestCrashKillNineFaulty is TestCrashKillNine on a disk that fails: the
// child serves three tablets on one shared commit log over a vfs.Faulty
// that injects random faults (ENOSPC, EIO, short writes) into commit log
// segments, SSTables and manifests while several writers write; it
// reopens every tablet that fails at the next epoch (on a new shared log
// when the old one is poisoned) and goes on writing. The parent kills it
// at a random moment, reopens the tablets on the healthy disk at a higher
// epoch with a new shared log, and checks that they open, that every
// acknowledged write is there with its value, that no write refused or
// never attempted is, and that no write is half there. Rounds repeat on
// the same folder. The seed gives the kill times and the seeds of the
// child's faults and writers; the interleaving of the child's goroutines
// is not replayed.
func TestCrashKillNineFaulty(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	seed := time.Now().UnixNano()
	if s, err := strconv.ParseInt(os.Getenv("TABULA_CRASH_SEED"), 10, 64); err == nil && s != 0 {
		seed = s
	}
	if *crashSeed != 0 {
		seed = *crashSeed
	}
	t.Logf("seed %d (replay with -crash.seed %d)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	root := t.TempDir()
	run := &crashFaultyRun{acked: map[string]bool{}, refused: map[string]bool{}, last: map[[2]int]int{}}
	const rounds = 5
	var faults, maybe, refused, reopens, moves, openFails, logs int
	for round := range rounds {
		run.faults, run.maybe, run.refusedN, run.reopens, run.moves, run.openFails, run.logs = 0, 0, 0, 0, 0, 0, 0
		run.faultOps = map[string]int{}
		delay := time.Duration(300+rng.Intn(900)) * time.Millisecond
		child := crashChild{test: "TestCrashFaultyChild", line: run.line(round), env: []string{
			crashDirEnv + "=" + root,
			crashRoundEnv + "=" + strconv.Itoa(round),
			crashEpochEnv + "=" + strconv.FormatInt(run.epoch+1, 10),
			crashFaultSeedEnv + "=" + strconv.FormatInt(rng.Int63(), 10),
		}}
		rows, _ := runCrashChild(t, child, round, delay)
		for _, row := range rows {
			_, rd, w, n, ok := parseCrashFaultyRow(row)
			if !ok || rd != round {
				t.Fatalf("round %d: the child acknowledged a row it does not write: %q", round, row)
			}
			run.acked[row] = true
			run.noteAttempt(rd, w, n)
		}
		present := checkCrashFaultyTablets(t, root, round, run)
		t.Logf("round %d: killed %v after READY; %d acks, %d failed writes (%d maybe, %d refused), %d faults %v, %d reopens of failed tablets, %d moves, %d failed opens, %d shared logs; %d rows present in total",
			round, delay, len(rows), run.maybe+run.refusedN, run.maybe, run.refusedN, run.faults, run.faultOps, run.reopens, run.moves, run.openFails, run.logs, present)
		faults += run.faults
		maybe += run.maybe
		refused += run.refusedN
		reopens += run.reopens
		moves += run.moves
		openFails += run.openFails
		logs += run.logs
	}
	t.Logf("in all: %d faults, %d failed writes (%d maybe, %d refused), %d reopens of failed tablets, %d moves, %d failed opens, %d shared logs",
		faults, maybe+refused, maybe, refused, reopens, moves, openFails, logs)
	if faults == 0 {
		t.Fatalf("no fault fired in %d rounds: the test proved nothing (seed %d)", rounds, seed)
	}
}

// checkCrashFaultyTablets reopens the tablets on the healthy disk, at an
// epoch above every one the child tried and with a new shared log, checks
// them against what the children printed and closes them; it returns the
// number of rows present.
func checkCrashFaultyTablets(t *testing.T, root string, round int, run *crashFaultyRun) int {
	t.Helper()
	run.epoch++
	l, err := sharedlog.Open(sharedlog.Options{Root: root, Name: fmt.Sprintf("check%02d", round), SyncMode: wal.SyncAlways})
	if err != nil {
		t.Fatalf("round %d: %v", round, err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			t.Errorf("round %d: closing the shared log: %v", round, err)
		}
	}()
	present := map[string]bool{}
	for tab := range crashTablets {
		opts := crashFaultyOptions(root, tab)
		opts.Create, opts.DisableBackgroundWork = false, true
		opts.Log, opts.Epoch = l, run.epoch
		tb, err := Open(opts)
		if err != nil {
			t.Fatalf("round %d: reopening tablet %d at epoch %d on the healthy disk after kill -9: %v", round, tab, run.epoch, err)
		}
		checkCrashFaultyTablet(t, tb, tab, round, run, present)
		if err := tb.Close(); err != nil {
			t.Errorf("round %d: tablet %d: Close: %v", round, tab, err)
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	var missing []string
	for row := range run.acked {
		if !present[row] {
			missing = append(missing, row)
		}
	}
	if len(missing) > 0 {
		if len(missing) > 10 {
			missing = missing[:10]
		}
		t.Fatalf("round %d: acknowledged writes lost after faults and kill -9, e.g. %v", round, missing)
	}
	return len(present)
}

// checkCrashFaultyTablet checks one reopened tablet's rows and adds them
// to present.
func checkCrashFaultyTablet(t *testing.T, tb *Tablet, tab, round int, run *crashFaultyRun, present map[string]bool) {
	t.Helper()
	it, err := tb.NewRowIterator(bg, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for it.Next() {
		row := string(it.Row())
		present[row] = true
		rtab, r, w, n, ok := parseCrashFaultyRow(row)
		switch {
		case !ok || rtab != tab || r > round:
			t.Errorf("round %d: tablet %d holds row %q, which was never written to it", round, tab, row)
			continue
		case run.refused[row]:
			t.Errorf("round %d: tablet %d holds row %s, whose write was refused (ErrFailed or ErrClosed: nothing applied)", round, tab, row)
		default:
			last, seen := run.last[[2]int{r, w}]
			if !seen {
				last = -1
			}
			if n > last+1 {
				t.Errorf("round %d: tablet %d holds row %s, which was never attempted (writer %d of round %d printed up to write %d)", round, tab, row, w, r, last)
			}
		}
		cs := it.Cells()
		if len(cs) != 2 || cs[0].Family != "a" || cs[1].Family != "b" {
			t.Errorf("round %d: row %s is partial or has extra cells: %s", round, row, render(cs))
			continue
		}
		for _, c := range cs {
			if string(c.Qualifier) != "v" || c.Timestamp != int64(n+1) || !bytes.Equal(c.Value, crashValue(row, c.Family)) {
				t.Errorf("round %d: row %s has a cell the child did not write: %s:%s@%d=%q", round, row, c.Family, c.Qualifier, c.Timestamp, c.Value)
			}
		}
	}
	if err := it.Close(); err != nil {
		t.Fatalf("round %d: tablet %d: scan after faults and kill -9: %v", round, tab, err)
	}
	// A point read of an acknowledged row goes through the bloom filters.
	for row := range run.acked {
		if rtab, _, _, _, _ := parseCrashFaultyRow(row); rtab != tab {
			continue
		}
		cs, err := tb.ReadRow(bg, []byte(row), nil)
		if err != nil || len(cs) != 2 {
			t.Fatalf("round %d: ReadRow(%s) = %s, %v; want its 2 cells", round, row, render(cs), err)
		}
		break
	}
}

// A tablet that closes with everything flushed but cannot save the
// manifest that releases the shared log (the disk is full) keeps its pin
// on the log: that manifest still names the log and a replay point in it,
// so the segments from there on must stay for its next owner. Close used
// to drop the pin whatever the save did; the log then deleted those
// segments as other tablets flushed, and the next open failed with
// "segment N of shared log ... is missing". TestCrashKillNineFaulty's
// moves reach this case only rarely; here it is every time.
func TestCrashFaultyFailedReleaseKeepsTheLog(t *testing.T) {
	root := t.TempDir()
	fsys := vfs.NewFaulty(vfs.Default)
	// SegmentSize 1: every write round starts a new segment.
	l, err := sharedlog.Open(sharedlog.Options{FS: fsys, Root: root, Name: "s1", SyncMode: wal.SyncAlways, SegmentSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() }) // after the tablets' (cleanups run last first)
	opts := func(name string, epoch int64) Options {
		o := testOptions(filepath.Join(root, "tables", name))
		o.FS, o.Log, o.Name, o.Epoch = fsys, l, name, epoch
		return o
	}
	t1, t2 := openTablet(t, opts("t1", 1)), openTablet(t, opts("t2", 1))
	apply(t, t1, "r1", set("a", "q", 1, "v1"))
	if err := t1.Flush(bg); err != nil {
		t.Fatal(err)
	}
	fsys.Set(failOn(vfs.OpCreate, func(p string) bool {
		return strings.HasPrefix(filepath.Base(p), "MANIFEST") && strings.Contains(filepath.ToSlash(p), "/t1/")
	}, vfs.NoSpace()))
	_ = t1.Close() // flushed: a clean close, whose release fails
	fsys.Set(nil)
	if st, _, _, err := manifest.LoadLatest(fsys, filepath.Join(root, "tables", "t1")); err != nil || st.Log != "s1" {
		t.Fatalf("after the failed release the manifest names log %q (%v), want s1", st.Log, err)
	}
	// Another tablet writes (new segments) and flushes (the log deletes
	// the segments no pin needs).
	for i := range 4 {
		apply(t, t2, "x", set("a", "q", int64(i+1), "v"))
	}
	if err := t2.Flush(bg); err != nil {
		t.Fatal(err)
	}
	t1 = openTablet(t, opts("t1", 2))
	if got := scan(t, t1, ReadOptions{}); got != "r1{a:q@1=v1}" {
		t.Fatalf("the reopened tablet reads %q", got)
	}
}
