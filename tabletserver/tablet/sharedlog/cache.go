package sharedlog

import (
	"bytes"
	"fmt"
	"sync"
	"time"

	"github.com/tabuladb/tabula/tabletserver/tablet/commitlog"
	"github.com/tabuladb/tabula/vfs"
)

// cache holds the records of foreign logs, grouped by tablet, so that the
// tablets of one dead server that this server loads read its log once in
// all, not once each.
//
// The bound (Options.CacheBytes) holds while a log is read, not only
// after: a replay streams the log once, hands its own tablet's records
// straight to the caller, and keeps another tablet's records only while
// the cache has room. When it has none, the tablet overflows: the cache
// keeps what it held of it and remembers where it stopped, and that
// tablet's replay reads the rest of the log again itself, holding one
// record at a time. Replays of the same log take turns (cachedLog.mu):
// the first one reads, the others find their records held. Room is made
// first by dropping logs no replay is using, least recently used first,
// then, for a tablet whose replay is waiting its turn, by letting a
// tablet nobody waits for overflow (the one holding most): concurrent
// loads of a dead server's tablets share one read as far as the bound
// allows.
type cache struct {
	fsys  vfs.FS
	root  string
	limit int64
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

	bytes   int64 // payload bytes held (cache.mu)
	lastUse time.Time
	inUse   int            // replays in progress or waiting for mu (cache.mu)
	waiting map[string]int // their tablets (cache.mu)
	dropped bool           // evicted: a replay that finds it so starts again (cache.mu)
}

// heldTablet is what the cache holds of one tablet of a log.
type heldTablet struct {
	recs  []record
	bytes int64 // payload bytes in recs
	// overflow says the cache stopped keeping the tablet's records for
	// want of room: they are in recs up to the first resumeSkip records
	// of the tablet in segment resumeSeg; its replay reads on from there.
	overflow   bool
	resumeSeg  uint64
	resumeSkip int
	// served says the records were handed to a replay (which may have
	// failed): a later replay of the tablet reads the log again itself.
	served bool
}

type record struct {
	seg     uint64
	epoch   uint64
	payload []byte
}

func newCache(fsys vfs.FS, root string, limit int64) *cache {
	return &cache{fsys: fsys, root: root, limit: limit, logs: map[string]*cachedLog{}}
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
		c.done(name, cl, tablet)
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

// done ends a use of cl by a replay of tablet; a log left holding
// nothing is dropped (what would it serve?).
func (c *cache) done(name string, cl *cachedLog, tablet string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl.inUse--
	if cl.waiting[tablet]--; cl.waiting[tablet] == 0 {
		delete(cl.waiting, tablet)
	}
	if cl.inUse == 0 && cl.bytes == 0 && !cl.dropped {
		c.dropLocked(name)
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
			if err := fn(r.payload); err != nil {
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
	if from > me.resumeSeg {
		return readDirect(c.fsys, dir, tablet, epoch, from, 0, fn), false
	}
	return readDirect(c.fsys, dir, tablet, epoch, me.resumeSeg, me.resumeSkip, fn), false
}

// hold keeps a copy of a record of another tablet than the one being
// replayed, if the cache has room for it; otherwise the tablet overflows.
func (c *cache) hold(cl *cachedLog, tablet string, seg, epoch uint64, payload []byte) {
	ht := cl.tablets[tablet]
	if ht == nil {
		ht = &heldTablet{}
		cl.tablets[tablet] = ht
	}
	if ht.served || ht.overflow {
		return
	}
	n := int64(len(payload))
	for !c.reserve(cl, n) {
		if !c.isWaiting(cl, tablet) || !c.evictIdleTablet(cl) {
			ht.overflowAt(seg)
			return
		}
	}
	ht.recs = append(ht.recs, record{seg: seg, epoch: epoch, payload: bytes.Clone(payload)})
	ht.bytes += n
}

// overflowAt stops keeping the tablet's records at its next record in
// segment seg.
func (ht *heldTablet) overflowAt(seg uint64) {
	ht.overflow, ht.resumeSeg, ht.resumeSkip = true, seg, 0
	for _, r := range ht.recs {
		if r.seg == seg {
			ht.resumeSkip++
		}
	}
}

func (c *cache) isWaiting(cl *cachedLog, tablet string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return cl.waiting[tablet] > 0
}

// evictIdleTablet makes a tablet of cl that no replay waits for, the one
// holding most, overflow from its first record, and releases what it
// held. It reports false if no such tablet holds anything.
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
	// Every record of the tablet since the log was first read is held
	// (it never overflowed): reading from its first one gets them all.
	first := victim.recs[0].seg
	c.release(cl, victim)
	victim.overflow, victim.resumeSeg, victim.resumeSkip = true, first, 0
	return true
}

// reserve counts n more bytes held by cl if they fit, dropping logs no
// replay uses (least recently used first) to make room.
func (c *cache) reserve(cl *cachedLog, n int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl.dropped {
		return false // the server is closing: keep nothing
	}
	for c.total+n > c.limit {
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
			return fmt.Errorf("%w: segment %d of shared log %s is missing", commitlog.ErrCorrupt, n, name)
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
