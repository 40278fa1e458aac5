package wal

import (
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tabuladb/tabula/vfs"
)

const (
	// flushThreshold is the buffered size past which Write hands the buffer
	// to the operating system itself instead of leaving it to the next Wait.
	flushThreshold = 1 << 20
	// maxSpare is the largest buffer kept for reuse between I/O rounds.
	maxSpare = 4 << 20
)

// Ticket identifies a record accepted by Write; Wait(t) blocks until it is
// durable. The zero Ticket is always durable.
type Ticket struct{ n uint64 }

// Log is the commit log of one tablet: the active segment it appends to,
// plus the older live segments it still accounts for until RemoveBefore. All
// methods are safe for concurrent use.
//
// Records are buffered by Write and handed to the file system in "rounds":
// one goroutine at a time (a Wait, Rotate, Close, or the interval syncer)
// takes the whole buffer, writes it, and fsyncs if the mode asks for it,
// without holding mu. Writers and waiters that arrive during a round queue
// behind it, and the next round covers all of them: that is group commit.
// The end of a round wakes only the waiters it answers, and one more to
// run the next round (Wait).
// In SyncBuffered a flusher goroutine (flusher.go) runs a round whenever
// records are buffered and no round runs, and nobody waits for it.
type Log struct {
	opts Options

	// fsyncs counts segment fsyncs, and wakes the times a queued Wait
	// was woken, for tests of group commit.
	fsyncs, wakes atomic.Int64
	// reuser is opts.FS when it can overwrite files (recycle.go), else
	// nil; noReuse is set when it said it cannot after all.
	reuser  vfs.Reuser
	noReuse atomic.Bool

	stop chan struct{}  // closed by Close to stop the interval syncer
	wg   sync.WaitGroup // the interval syncer or the flusher

	// mu protects the fields below. cond (on mu) is broadcast at the end of
	// every round and by Close, for Close, Rotate, Sync and the interval
	// syncer waiting for a round to end (Wait queues in waiters instead). wake (on mu) is signalled for the
	// SyncBuffered flusher while it sleeps (flusherIdle) and records wait.
	mu          sync.Mutex
	cond        *sync.Cond
	wake        *sync.Cond
	flusherIdle bool
	// buf holds framed records not yet handed to the file system; spare is
	// a buffer kept for the next swap. inflight is the size of the
	// buffer the running round is writing.
	buf, spare []byte
	inflight   int
	appended   uint64 // tickets handed out
	written    uint64 // records handed to the file system
	synced     uint64 // records fsynced
	busy       bool   // a round runs outside mu
	// waiters are the Waits queued behind the running round, in no
	// particular order; the end of each round answers them
	// (answerWaitersLocked).
	waiters []*waiter
	err     error // set by the first failed write or fsync: the log is poisoned
	closed  bool
	f       vfs.Writable // active segment; nil after Close
	seg     uint64       // active segment number
	// rotating says the running round moves on to segment seg+1:
	// records written meanwhile go there. bufSeg is the segment the
	// records in buf were framed for (their checksums cover its number).
	rotating bool
	bufSeg   uint64
	// seed is recordSeed of segment seedSeg, computed once per segment.
	seed    uint32
	seedSeg uint64
	// activeBytes counts the active segment's bytes, buffered ones included.
	activeBytes int64
	old         []segmentInfo // live segments older than the active one, ascending
	oldBytes    int64
	// pool holds the segment files kept for reuse (recycle.go);
	// poolPending counts those RemoveBefore is moving there.
	pool        []pooled
	poolPending int

	// writtenBack is how far into the active segment the write-out of
	// written bytes was started (writeback.go). Only the running round
	// uses it.
	writtenBack int64
}

type segmentInfo struct {
	num  uint64
	size int64
	// mine says this Log wrote the segment (in the current format): it
	// may be recycled. Segments found at Open are only ever deleted.
	mine bool
}

// Open starts a new segment numbered after the largest existing one in
// opts.Dir (1 if there is none) and returns a Log appending to it. It never
// appends to an existing file, so it is called after Replay, which also
// cuts what a crash left after the last segment's records (a torn
// record, or a recycled file's stale bytes): the new segment records
// nothing of its predecessor, which must end at its last record. Existing
// segments stay live (they count in Size) until RemoveBefore deletes
// them. Pooled files a crash left (recycle.go) are deleted.
func Open(opts Options) (_ *Log, err error) {
	if opts, err = opts.withDefaults(); err != nil {
		return nil, err
	}
	if err := opts.FS.MkdirAll(opts.Dir); err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	nums, err := listSegments(opts.FS, opts.Dir)
	if err != nil {
		return nil, err
	}
	l := &Log{opts: opts, stop: make(chan struct{})}
	l.cond = sync.NewCond(&l.mu)
	l.wake = sync.NewCond(&l.mu)
	if r, ok := opts.FS.(vfs.Reuser); ok {
		l.reuser = r
	}
	removeLeftovers(opts.FS, opts.Dir)
	for _, n := range nums {
		st, err := opts.FS.Stat(segmentPath(opts.Dir, n))
		if err != nil {
			return nil, fmt.Errorf("wal: %w", err)
		}
		l.old = append(l.old, segmentInfo{num: n, size: st.Size})
		l.oldBytes += st.Size
	}
	l.seg = 1
	if len(nums) > 0 {
		l.seg = nums[len(nums)-1] + 1
	}
	// The segments before this one were written by another process (an
	// earlier owner, whose torn tail replay may have cut): the new
	// segment vouches for none of them.
	if l.f, err = l.createSegment(l.seg, 0, 0, nil); err != nil {
		return nil, err
	}
	l.activeBytes = int64(headerLen)
	l.bufSeg = l.seg
	switch opts.SyncMode {
	case SyncInterval:
		l.wg.Add(1)
		go l.syncLoop()
	case SyncBuffered:
		l.wg.Add(1)
		go l.flushLoop()
	}
	return l, nil
}

// createSegment creates segment n with its header, recording prev and
// its final length prevLen (prev 0: none), and makes it durable, so
// that a segment the manifest may name as replay point always exists. The
// file is created exclusively (vfs.FS.Create, or vfs.Reuser.Reuse of the
// pooled file p when p is set), so an older owner of the tablet still
// running can never start a segment this one started. Records are
// written only after the file and its name are durable (recycle.go).
func (l *Log) createSegment(n, prev uint64, prevLen int64, p *pooled) (_ vfs.Writable, err error) {
	path := segmentPath(l.opts.Dir, n)
	f, err := l.openSegment(path, p)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			f.Close()
			l.opts.FS.Remove(path)
		}
	}()
	if _, err := f.Write(appendHeader(nil, n, prev, prevLen)); err != nil {
		return nil, fmt.Errorf("wal: write %s: %w", path, err)
	}
	if err := l.syncFile(f); err != nil {
		return nil, fmt.Errorf("wal: fsync %s: %w", path, err)
	}
	if err := l.opts.FS.SyncDir(l.opts.Dir); err != nil {
		return nil, fmt.Errorf("wal: fsync %s: %w", l.opts.Dir, err)
	}
	return f, nil
}

func (l *Log) syncFile(f vfs.Writable) error {
	l.fsyncs.Add(1)
	return f.Sync()
}

// Write frames payload and queues it after every record written before; it
// does not wait for durability (see Wait). Records reach the file in call
// order.
func (l *Log) Write(payload []byte) (Ticket, error) { return l.WriteTagged(nil, payload) }

// WriteTagged is Write of one record holding tag followed by payload,
// without the caller joining them first (a shared log tags each record with
// its tablet).
func (l *Log) WriteTagged(tag, payload []byte) (Ticket, error) {
	if uint64(len(tag)+len(payload)) > maxPayload {
		return Ticket{}, fmt.Errorf("wal: record of %d bytes is too large", len(tag)+len(payload))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	buffered := l.opts.SyncMode == SyncBuffered
	if buffered {
		l.waitRoomLocked()
	}
	if l.err != nil {
		return Ticket{}, l.err
	}
	if l.closed {
		return Ticket{}, ErrClosed
	}
	// The record lands in the active segment, or in the next one if the
	// running round is moving on to it (it took every record before).
	seg := l.seg
	if l.busy && l.rotating {
		seg++
	}
	if len(l.buf) > 0 && l.bufSeg != seg {
		panic(fmt.Sprintf("wal: buffered records framed for segment %d, the next for %d", l.bufSeg, seg))
	}
	l.bufSeg = seg
	if seg != l.seedSeg {
		l.seedSeg, l.seed = seg, recordSeed(formatVersion, seg)
	}
	l.buf = appendRecord(l.buf, l.seed, tag, payload)
	l.appended++
	l.activeBytes += int64(frameHeaderLen + len(tag) + len(payload))
	t := Ticket{l.appended}
	if buffered {
		l.kickLocked()
		return t, nil
	}
	if len(l.buf) >= flushThreshold && !l.busy {
		// Keep the buffer bounded when nobody waits (SyncNone callers
		// that batch); the record is accepted whatever happens here, and
		// a failure poisons the log for the next call.
		_ = l.roundLocked(false, false)
	}
	return t, nil
}

// Wait blocks until the record of t is durable per the sync mode: fsynced
// for SyncAlways, in the log's buffer for SyncBuffered (it only reports
// whether the log is poisoned), handed to the operating system otherwise.
// Concurrent waiters share one write and one fsync per round.
//
// A waiter that finds no round running runs one itself. One that finds a
// round running queues itself (waiters) and sleeps until the end of a
// round answers it: with its result once its record is durable (or the
// log poisoned or closed), or with errLead when its record is still
// unsynced and it is to run the next round. Nobody else is woken: a
// broadcast would wake every waiter at the end of every round, those
// whose records came too late for it too, and each would take mu again
// only to sleep once more (docs/BENCHMARKS.md, "Requests near the gRPC
// floor").
func (l *Log) Wait(t Ticket) error {
	l.mu.Lock()
	for {
		if err, done := l.waitDoneLocked(t.n); done {
			l.mu.Unlock()
			return err
		}
		if !l.busy {
			if l.opts.SyncMode == SyncAlways {
				l.gatherLocked()
			}
			if err := l.roundLocked(l.opts.SyncMode == SyncAlways, false); err != nil {
				l.mu.Unlock()
				return err
			}
			continue
		}
		w := waiterPool.Get().(*waiter)
		w.t = t.n
		l.waiters = append(l.waiters, w)
		l.mu.Unlock()
		err := <-w.answer
		waiterPool.Put(w)
		l.wakes.Add(1)
		if err != errLead {
			return err
		}
		l.mu.Lock()
	}
}

// waitDoneLocked reports whether a waiter for the record numbered n has
// its answer, and which: the poisoning error, nil once the record is
// durable per the sync mode, ErrClosed if it is not and the log is
// closed.
func (l *Log) waitDoneLocked(n uint64) (error, bool) {
	if l.err != nil {
		return l.err, true
	}
	if l.opts.SyncMode == SyncBuffered {
		return nil, true
	}
	durable := l.written
	if l.opts.SyncMode == SyncAlways {
		durable = l.synced
	}
	if n <= durable {
		return nil, true
	}
	if l.closed {
		return ErrClosed, true
	}
	return nil, false
}

// waiter is a Wait queued behind a running round. answer (buffered, one
// answer per queueing) receives its result, or errLead.
type waiter struct {
	t      uint64
	answer chan error
}

// waiterPool keeps waiters, with their channels, for reuse.
var waiterPool = sync.Pool{New: func() any { return &waiter{answer: make(chan error, 1)} }}

// errLead tells a queued waiter that its record is not durable yet and
// that it is to run the next round. Wait never returns it.
var errLead = errors.New("wal: run the next round")

// answerWaitersLocked is called with mu held at the end of every round,
// busy unset: it answers the queued waiters whose records the round made
// durable (all of them if it poisoned the log, or the log is closed), and
// hands the next round to one of those left, so that no waiter sleeps
// while no round runs for it.
func (l *Log) answerWaitersLocked() {
	if len(l.waiters) == 0 {
		return
	}
	left := l.waiters[:0]
	for _, w := range l.waiters {
		if err, done := l.waitDoneLocked(w.t); done {
			w.answer <- err
		} else {
			left = append(left, w)
		}
	}
	if len(left) > 0 && !l.busy {
		left[len(left)-1].answer <- errLead
		left = left[:len(left)-1]
	}
	clear(l.waiters[len(left):])
	l.waiters = left
}

// gatherLocked lets the writers that are ready to run append their
// records before a waiter starts a synced round, so that its fsync covers
// them too. Without it, the first writer to wait after a round starts the
// next one alone, and concurrent writers settle into two cohorts that
// alternate, each fsync covering half of them (docs/BENCHMARKS.md,
// "Group commit"). It yields the processor, again while records keep
// arriving (at most maxGatherYields times), with the log marked busy so
// that the writers it lets run wait for the round instead of starting
// their own; it waits for no clock. Called with mu held and busy unset;
// returns with mu held and busy unset.
func (l *Log) gatherLocked() {
	l.busy = true
	for range maxGatherYields {
		before := l.appended
		l.mu.Unlock()
		gatherYield()
		l.mu.Lock()
		if l.appended == before {
			break
		}
	}
	l.busy = false
}

// Append writes one record and returns once it is durable per the sync
// mode: Write followed by Wait.
func (l *Log) Append(payload []byte) error {
	t, err := l.Write(payload)
	if err != nil {
		return err
	}
	return l.Wait(t)
}

// Rotate fsyncs and closes the active segment and starts the next one,
// returning its number. Every record written before the call is in a
// segment numbered below it.
func (l *Log) Rotate() (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.idleLocked(); err != nil {
		return 0, err
	}
	if err := l.roundLocked(true, true); err != nil {
		return 0, err
	}
	return l.seg, nil
}

// idleLocked waits until no round runs. It fails if the log is poisoned or
// closed.
func (l *Log) idleLocked() error {
	for {
		if l.err != nil {
			return l.err
		}
		if l.closed {
			return ErrClosed
		}
		if !l.busy {
			return nil
		}
		l.cond.Wait()
	}
}

// roundLocked runs one round: it hands the buffered records to the active
// segment, fsyncs it if sync is set, and moves to the next segment if rotate
// is set or the segment is full. It is called with mu held and busy unset,
// drops mu for the I/O and returns with mu held. A failure poisons the log.
func (l *Log) roundLocked(sync, rotate bool) error {
	l.busy = true
	data := l.buf
	l.buf, l.spare = l.spare[:0], nil
	l.inflight = len(data)
	target := l.appended
	roundBytes := l.activeBytes
	f, seg := l.f, l.seg
	if len(data) > 0 && l.bufSeg != seg {
		panic(fmt.Sprintf("wal: records framed for segment %d written to %d", l.bufSeg, seg))
	}
	rotate = rotate || roundBytes >= l.opts.SegmentSize
	sync = sync || rotate
	group := int(target - l.synced)
	var reuse *pooled
	if rotate {
		reuse = l.poolTakeLocked()
	}
	l.rotating = rotate
	l.mu.Unlock()

	var began time.Time
	if l.opts.OnSync != nil && sync {
		began = time.Now()
	}
	var err error
	var nf vfs.Writable
	oldClosed := false
	if len(data) > 0 {
		if _, err = f.Write(data); err != nil {
			err = fmt.Errorf("wal: write %s: %w", segmentPath(l.opts.Dir, seg), err)
		}
	}
	if err == nil && !sync && len(data) > 0 {
		l.startWriteback(f, roundBytes)
	}
	if err == nil && sync {
		if err = l.syncFile(f); err != nil {
			err = fmt.Errorf("wal: fsync %s: %w", segmentPath(l.opts.Dir, seg), err)
		} else if l.opts.OnSync != nil {
			l.opts.OnSync(SyncEvent{Records: group, Bytes: len(data), Duration: time.Since(began)})
		}
	}
	if err == nil && rotate {
		oldClosed = true
		// roundBytes is the closed segment's final size: this round
		// wrote everything buffered before it. A recycled segment is
		// cut there before the next one exists: only the last segment
		// may hold stale bytes (recycle.go).
		if err = f.Close(); err == nil && l.reuser != nil {
			err = cutStale(l.opts.FS, segmentPath(l.opts.Dir, seg), roundBytes)
		}
		if err == nil {
			nf, err = l.createSegment(seg+1, seg, roundBytes, reuse)
			reuse = nil // used, or deleted if it could not be
			l.writtenBack = 0
		}
	}

	l.mu.Lock()
	l.busy = false
	l.rotating = false
	if reuse != nil {
		l.pool = append(l.pool, *reuse) // not used: Close deletes it
	}
	l.inflight = 0
	if len(l.buf) > 0 {
		l.kickLocked() // records buffered while this round ran
	}
	if cap(data) <= maxSpare {
		l.spare = data[:0]
	}
	defer func() {
		l.answerWaitersLocked()
		l.cond.Broadcast()
	}()
	if oldClosed {
		l.f = nf // nil if creating the next segment failed
	}
	if err != nil {
		if l.err == nil {
			l.err = err
		}
		return l.err
	}
	l.written = target
	if sync {
		l.synced = target
	}
	if rotate {
		l.old = append(l.old, segmentInfo{num: seg, size: roundBytes, mine: true})
		l.oldBytes += roundBytes
		l.activeBytes = int64(headerLen) + l.activeBytes - roundBytes
		l.seg = seg + 1
	}
	return nil
}

// syncLoop fsyncs the log every SyncInterval while records are unsynced.
func (l *Log) syncLoop() {
	defer l.wg.Done()
	t := time.NewTicker(l.opts.SyncInterval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		l.mu.Lock()
		if l.idleLocked() == nil && l.synced < l.appended {
			_ = l.roundLocked(true, false) // a failure poisons the log
		}
		l.mu.Unlock()
	}
}

// RemoveBefore deletes the segments numbered below seg, or keeps up to
// Options.RecycleSegments of them aside for reuse (recycle.go): either
// way they are no longer segments. The active segment is never deleted.
func (l *Log) RemoveBefore(seg uint64) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	i := 0
	for i < len(l.old) && l.old[i].num < seg {
		i++
	}
	doomed := l.old[:i:i]
	l.old = l.old[i:]
	for _, s := range doomed {
		l.oldBytes -= s.size
	}
	recycle := l.poolPickLocked(doomed)
	l.mu.Unlock()

	var errs []error
	var kept []segmentInfo
	var pool []pooled
	for _, s := range doomed {
		if recycle[s.num] && l.toPool(s) {
			pool = append(pool, pooled{s.num, s.size})
			continue
		}
		if err := l.opts.FS.Remove(segmentPath(l.opts.Dir, s.num)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("wal: %w", err))
			kept = append(kept, s)
		}
	}
	if len(recycle) > 0 {
		l.mu.Lock()
		drop := l.poolAddLocked(len(recycle), pool)
		l.mu.Unlock()
		l.dropPool(drop)
	}
	if len(kept) > 0 {
		// Account again for the segments that could not be deleted, so a
		// later call retries them.
		l.mu.Lock()
		l.old = append(kept, l.old...)
		for _, s := range kept {
			l.oldBytes += s.size
		}
		l.mu.Unlock()
	}
	return errors.Join(errs...)
}

// Size returns the bytes in live segments, records not yet written included.
func (l *Log) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.oldBytes + l.activeBytes
}

// Close writes and fsyncs what is buffered, stops the background syncer and
// closes the active segment. It returns the poisoning error if the log was
// poisoned. Close is idempotent; later calls return nil.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.wake.Broadcast() // the flusher stops; this round drains the buffer
	for l.busy {
		l.cond.Wait()
	}
	err := l.err
	if err == nil {
		err = l.roundLocked(true, false)
	}
	f := l.f
	l.f = nil
	active := segmentPath(l.opts.Dir, l.seg)
	end := l.activeBytes // all of it written by the round above
	pool := l.pool
	l.pool = nil
	l.cond.Broadcast()
	l.mu.Unlock()
	l.dropPool(pool)

	close(l.stop)
	l.wg.Wait()
	if f != nil {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("wal: %w", cerr)
		}
	}
	if err == nil && l.reuser != nil {
		err = cutStale(l.opts.FS, active, end)
	}
	return err
}

// cutStale truncates the closed segment at path to end, its records'
// end, if it is longer (a recycled file holds its earlier lives' bytes
// after its records), and makes the cut durable: a segment that has a
// successor never holds stale bytes (recycle.go).
func cutStale(fsys vfs.FS, path string, end int64) error {
	st, err := fsys.Stat(path)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	if st.Size > end {
		return truncate(fsys, path, end)
	}
	return nil
}

// Segment returns the number of the active segment: every record written
// from now on lands in it or in a later one.
func (l *Log) Segment() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seg
}

// Dir returns the folder of the log's segments.
func (l *Log) Dir() string { return l.opts.Dir }

// Err returns the error that poisoned the log, or nil.
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Sync writes what is buffered and fsyncs the active segment, whatever the
// sync mode: every record written before the call is then durable (and, on
// an object store, visible to other readers).
func (l *Log) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.idleLocked(); err != nil {
		return err
	}
	return l.roundLocked(true, false)
}

// maxGatherYields bounds the yields of gatherLocked: it yields again
// while records keep arriving, so that a stream of new writers cannot
// hold the fsync back.
const maxGatherYields = 16

// gatherYield is how gatherLocked yields (a variable: tests replace it).
var gatherYield = runtime.Gosched
