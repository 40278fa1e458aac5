package sharedlog

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/wal"
)

// cache holds the records of foreign logs, grouped by tablet, so that the
// tablets of one dead server that this server loads read its log once in
// all, not once each.
//
// The bound (Options.CacheBytes) holds while a log is read, not only
// after: a replay streams the log once, hands its own tablet's records
// straight to the caller, and keeps another tablet's records in memory
// while the cache has room, and past that in a local spill file
// (Options.SpillDir; the memory holds only where each record is). Room is
// made first by dropping logs no replay is using, least recently used
// first. Replays of the same log take turns (cachedLog.mu): the first one
// reads, the others find their records kept.
//
// Only when a record can be neither held nor spilled (no room even for
// its place in the spill file, or the spill file failed) does its tablet
// overflow: the cache drops what it held of it (a tablet is kept whole or
// not at all), and that tablet's replay reads the log again itself from
// its first record, keeping on the way the other overflowed tablets that
// fit. For a tablet whose replay is waiting its turn the cache first lets
// a tablet nobody waits for overflow.
type cache struct {
	fsys     vfs.FS
	root     string
	limit    int64
	spillDir string
	// onHold, if set, is called with the bytes held after every change
	// (tests check the bound with it). The default is nil.
	onHold func(total int64)

	// mu protects the fields below and every cachedLog's bytes, lastUse,
	// inUse and dropped.
	mu    sync.Mutex
	logs  map[string]*cachedLog
	total int64 // payload bytes held by all logs
}

// cachedLog is what was read of one foreign log.
type cachedLog struct {
	// mu is held while the log is read or served; it protects the
	// fields below it.
	mu      sync.Mutex
	st      *scanState
	tablets map[string]*heldTablet
	spill   *spillFile // made at the first record past the budget; closed with the log
	// spillErr is why spilling failed: the log spills no more.
	spillErr error
	buf      []byte // for records read back from spill

	bytes   int64 // payload bytes held (cache.mu)
	lastUse time.Time
	inUse   int            // replays in progress or waiting for mu (cache.mu)
	waiting map[string]int // their tablets (cache.mu)
	dropped bool           // evicted: a replay that finds it so starts again (cache.mu)
}

// heldTablet is what the cache holds of one tablet of a log.
type heldTablet struct {
	recs  []record
	bytes int64 // bytes counted for recs: payloads held, spillRefBytes for each spilled
	seen  int64 // payload bytes of the tablet's records the cache read
	// overflow says the cache stopped keeping the tablet's records for
	// want of room: its records before the first resumeSkip of them in
	// segment resumeSeg are in recs (none, as evict leaves it); its
	// replay reads on from there.
	overflow   bool
	resumeSeg  uint64
	resumeSkip int
	// served says the records were handed to a replay (which may have
	// failed): a later replay of the tablet reads the log again itself.
	served bool
}

// record is a record kept: its payload, or where it is in the spill file.
type record struct {
	seg      uint64
	epoch    uint64
	payload  []byte
	spilled  bool
	spillOff int64
	spillLen int
}

func newCache(fsys vfs.FS, root string, limit int64, spillDir string) *cache {
	return &cache{fsys: fsys, root: root, limit: limit, spillDir: spillDir, logs: map[string]*cachedLog{}}
}

// keep adds a copy of a record to ht: in memory if the budget has room,
// else in the spill file. It reports false if neither can take it.
func (c *cache) keep(cl *cachedLog, ht *heldTablet, seg, epoch uint64, payload []byte) bool {
	// Payloads take at most half the budget while spilling works: the
	// other half holds where the spilled records are.
	memory := c.limit
	if cl.spillErr == nil {
		memory /= 2
	}
	if n := int64(len(payload)); c.reserve(cl, n, memory) {
		ht.recs = append(ht.recs, record{seg: seg, epoch: epoch, payload: bytes.Clone(payload)})
		ht.bytes += n
		return true
	}
	if cl.spillErr != nil || !c.reserve(cl, spillRefBytes, c.limit) {
		return false
	}
	if cl.spill == nil {
		cl.spill, cl.spillErr = newSpillFile(c.spillDir)
	}
	var off int64
	if cl.spillErr == nil {
		off, cl.spillErr = cl.spill.add(payload)
	}
	if cl.spillErr != nil {
		c.unreserve(cl, spillRefBytes)
		return false
	}
	ht.recs = append(ht.recs, record{seg: seg, epoch: epoch, spilled: true, spillOff: off, spillLen: len(payload)})
	ht.bytes += spillRefBytes
	return true
}

// payload returns r's payload, read back from the spill file if need be
// (valid until the next call).
func (cl *cachedLog) payload(r record) ([]byte, error) {
	if !r.spilled {
		return r.payload, nil
	}
	var err error
	cl.buf, err = cl.spill.read(cl.buf, r.spillOff, r.spillLen)
	return cl.buf, err
}

// replay serves tablet's records of the foreign log name from segment
// from on: those held, then those in what was appended to the log since
// it was last read, then, if the tablet overflowed, the rest read again.
// A tablet served before (a second load of it) reads the log again
// itself: its records were handed out and dropped.
func (c *cache) replay(name, tablet string, epoch, from uint64, fn func([]byte) error) error {
	for {
		cl := c.use(name, tablet)
		cl.mu.Lock()
		err, again := c.serveLocked(name, cl, tablet, epoch, from, fn)
		cl.mu.Unlock()
		c.done(cl, tablet)
		if !again {
			return err
		}
	}
}

// use returns the cached log name, made if need be, counted in use by a
// replay of tablet.
func (c *cache) use(name, tablet string) *cachedLog {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.logs[name]
	if cl == nil {
		cl = &cachedLog{st: newScanState(), tablets: map[string]*heldTablet{}, waiting: map[string]int{}}
		cl.st.tolerant = true
		c.logs[name] = cl
	}
	cl.inUse++
	cl.waiting[tablet]++
	cl.lastUse = time.Now()
	return cl
}

// done ends a use of cl by a replay of tablet. A log left holding no
// records stays (until idle): it still knows which tablets were served
// and how far it was read.
func (c *cache) done(cl *cachedLog, tablet string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl.inUse--
	if cl.waiting[tablet]--; cl.waiting[tablet] == 0 {
		delete(cl.waiting, tablet)
	}
	if cl.dropped && cl.inUse == 0 && cl.spill != nil {
		cl.spill.close()
		cl.spill = nil
	}
}

// serveLocked is replay with cl.mu held. again says cl was dropped
// before this replay got to it: start again on a fresh one.
func (c *cache) serveLocked(name string, cl *cachedLog, tablet string, epoch, from uint64, fn func([]byte) error) (err error, again bool) {
	c.mu.Lock()
	dropped := cl.dropped
	c.mu.Unlock()
	if dropped {
		return nil, true
	}
	dir := Dir(c.root, name)
	me := cl.tablets[tablet]
	if me == nil {
		me = &heldTablet{}
		cl.tablets[tablet] = me
	}
	if me.served {
		return readDirect(c.fsys, dir, tablet, epoch, from, 0, fn), false
	}
	defer func() {
		me.served = true
		c.release(cl, me)
		if err != nil {
			c.drop(name, cl) // a retry starts afresh: a listing may have caught up
		}
	}()
	for _, r := range me.recs {
		if r.epoch == epoch && r.seg >= from {
			p, err := cl.payload(r)
			if err == nil {
				err = fn(p)
			}
			if err != nil {
				return err, false
			}
		}
	}
	err = scan(c.fsys, dir, 0, cl.st, func(seg uint64, p []byte) error {
		t, e, rest, err := parseTag(p)
		if err != nil {
			return err
		}
		if string(t) != tablet {
			c.hold(cl, string(t), seg, e, rest)
			return nil
		}
		if me.overflow || e != epoch || seg < from {
			return nil
		}
		return fn(rest)
	})
	if err == nil {
		err = checkFrom(cl.st, name, from)
	}
	if err != nil || !me.overflow {
		return err, false
	}
	return c.rereadLocked(name, cl, me, tablet, epoch, from, fn), false
}

// rereadLocked serves the records of me (which overflowed) from where the
// cache stopped keeping them, reading the log again up to where the cache
// read it. On the way it keeps, within the budget, the records of the
// other tablets that overflowed at or after that point, from where each
// stopped: the tablets of a log larger than the budget then read it again
// about once per budget's worth, not once each.
func (c *cache) rereadLocked(name string, cl *cachedLog, me *heldTablet, tablet string, epoch, from uint64, fn func([]byte) error) error {
	dir := Dir(c.root, name)
	start, skip := me.resumeSeg, me.resumeSkip
	if from > start {
		start, skip = from, 0
	}
	if len(cl.st.failed) > 0 {
		// What the cache holds of a segment it could not read is a
		// prefix: keep it simple, and read for this tablet alone.
		return readDirect(c.fsys, dir, tablet, epoch, start, skip, fn)
	}
	// The other tablets that overflowed at or after start and whose
	// records fit in the room left, fewest bytes first, each with the
	// records already held in the segment where it stopped.
	type catching struct {
		name string
		ht   *heldTablet
		skip int
		live bool // past its resume point: keeping its records
	}
	var cands []*catching
	for t, ht := range cl.tablets {
		if t != tablet && ht.overflow && !ht.served && ht.resumeSeg >= start {
			cands = append(cands, &catching{name: t, ht: ht, skip: ht.resumeSkip})
		}
	}
	slices.SortFunc(cands, func(a, b *catching) int {
		return cmp.Or(cmp.Compare(a.ht.seen-a.ht.bytes, b.ht.seen-b.ht.bytes), strings.Compare(a.name, b.name))
	})
	c.mu.Lock()
	room := c.limit - c.total
	c.mu.Unlock()
	catch := map[string]*catching{}
	for _, ct := range cands {
		// With a spill file, every tablet may fit.
		if need := ct.ht.seen - ct.ht.bytes; need <= room || cl.spillErr == nil {
			catch[ct.name] = ct
			room -= need
		}
	}
	var segs []uint64
	for n := range cl.st.ends {
		if n >= start {
			segs = append(segs, n)
		}
	}
	slices.Sort(segs)
	for _, n := range segs {
		err := wal.ReadSegmentTo(c.fsys, dir, n, 0, cl.st.ends[n], func(p []byte) error {
			t, e, rest, err := parseTag(p)
			if err != nil {
				return err
			}
			if string(t) == tablet {
				if n == start && skip > 0 {
					skip--
					return nil
				}
				if e == epoch && n >= from {
					return fn(rest)
				}
				return nil
			}
			ct := catch[string(t)]
			if ct == nil || (!ct.live && n < ct.ht.resumeSeg) {
				return nil
			}
			if !ct.live && n == ct.ht.resumeSeg && ct.skip > 0 {
				ct.skip--
				return nil
			}
			ct.live = true
			if !c.keep(cl, ct.ht, n, e, rest) {
				c.evict(cl, ct.ht, n)
				delete(catch, string(t))
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("sharedlog: %w", err)
		}
	}
	// Those caught up to the end hold every record the cache read.
	for _, ct := range catch {
		ct.ht.overflow = false
	}
	return nil
}

// hold keeps a copy of a record of another tablet than the one being
// replayed, if the cache has room for it; otherwise the tablet overflows.
// A tablet is kept whole or not at all (what it held goes when it
// overflows): half of every tablet would make each of them read the log
// again, all of some lets those be served from memory.
func (c *cache) hold(cl *cachedLog, tablet string, seg, epoch uint64, payload []byte) {
	ht := cl.tablets[tablet]
	if ht == nil {
		ht = &heldTablet{}
		cl.tablets[tablet] = ht
	}
	ht.seen += int64(len(payload))
	if ht.served || ht.overflow {
		return
	}
	for !c.keep(cl, ht, seg, epoch, payload) {
		if !c.isWaiting(cl, tablet) || !c.evictIdleTablet(cl) {
			c.evict(cl, ht, seg)
			return
		}
	}
}

// evict releases what ht holds and makes it overflow from its first
// record (in segment seg if it held none): it holds every record it has
// until it overflows.
func (c *cache) evict(cl *cachedLog, ht *heldTablet, seg uint64) {
	if len(ht.recs) > 0 {
		seg = ht.recs[0].seg
	}
	c.release(cl, ht)
	ht.overflow, ht.resumeSeg, ht.resumeSkip = true, seg, 0
}

func (c *cache) isWaiting(cl *cachedLog, tablet string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return cl.waiting[tablet] > 0
}

// evictIdleTablet evicts the tablet of cl that holds most and that no
// replay waits for. It reports false if no such tablet holds anything.
func (c *cache) evictIdleTablet(cl *cachedLog) bool {
	c.mu.Lock()
	var victim *heldTablet
	for name, ht := range cl.tablets {
		if cl.waiting[name] == 0 && ht.bytes > 0 && (victim == nil || ht.bytes > victim.bytes) {
			victim = ht
		}
	}
	c.mu.Unlock()
	if victim == nil {
		return false
	}
	c.evict(cl, victim, 0)
	return true
}

// reserve counts n more bytes held by cl if the total stays within
// limit, dropping logs no replay uses (least recently used first) to make
// room.
func (c *cache) reserve(cl *cachedLog, n, limit int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl.dropped {
		return false // the server is closing: keep nothing
	}
	for c.total+n > limit {
		victim, oldest := "", time.Time{}
		for name, o := range c.logs {
			if o != cl && o.inUse == 0 && (victim == "" || o.lastUse.Before(oldest)) {
				victim, oldest = name, o.lastUse
			}
		}
		if victim == "" {
			return false
		}
		c.dropLocked(victim)
	}
	c.total += n
	cl.bytes += n
	if c.onHold != nil {
		c.onHold(c.total)
	}
	return true
}

// unreserve gives back n bytes reserve counted for cl.
func (c *cache) unreserve(cl *cachedLog, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !cl.dropped {
		cl.bytes -= n
		c.total -= n
	}
}

// release forgets the records held of ht (handed out).
func (c *cache) release(cl *cachedLog, ht *heldTablet) {
	n := ht.bytes
	ht.recs, ht.bytes = nil, 0
	c.mu.Lock()
	defer c.mu.Unlock()
	if !cl.dropped {
		cl.bytes -= n
		c.total -= n
	}
}

// checkFrom fails if a segment from segment from (0: the first) to the
// last was never seen in the log, or could not be read (read from 0, so
// every segment present was seen).
func checkFrom(st *scanState, name string, from uint64) error {
	first, last := uint64(0), uint64(0)
	for n := range st.ends {
		if first == 0 || n < first {
			first = n
		}
		last = max(last, n)
	}
	for n := range st.failed {
		if first == 0 || n < first {
			first = n
		}
		last = max(last, n)
	}
	if from == 0 {
		from = first
	}
	for n := from; n <= max(from, last); n++ {
		if err := st.failed[n]; err != nil {
			return err
		}
		if _, ok := st.ends[n]; !ok {
			return fmt.Errorf("%w: segment %d of shared log %s is missing", wal.ErrCorrupt, n, name)
		}
	}
	return nil
}

func (c *cache) totalLocked() int64 { return c.total }

// drop removes cl from the cache if it is still there.
func (c *cache) drop(name string, cl *cachedLog) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.logs[name] == cl {
		c.dropLocked(name)
	}
}

// dropLocked removes the log name; its records no longer count (a replay
// still serving from it finds it dropped and holds no more).
func (c *cache) dropLocked(name string) {
	cl := c.logs[name]
	if cl == nil {
		return
	}
	c.total -= cl.bytes
	cl.bytes = 0
	cl.dropped = true
	delete(c.logs, name)
	if cl.inUse == 0 && cl.spill != nil {
		cl.spill.close() // an unlinked local file: closing it frees its space
		cl.spill = nil
	}
	if c.onHold != nil {
		c.onHold(c.total)
	}
}

// dropIdle drops the logs no replay uses that were last used before cutoff.
func (c *cache) dropIdle(cutoff time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for n, o := range c.logs {
		if o.inUse == 0 && o.lastUse.Before(cutoff) {
			c.dropLocked(n)
		}
	}
}

func (c *cache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for n := range c.logs {
		c.dropLocked(n)
	}
}
