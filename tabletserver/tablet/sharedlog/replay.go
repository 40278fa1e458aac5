package sharedlog

import (
	"bytes"
	"fmt"
	"sync"
	"time"

	"github.com/tabuladb/tabula/tabletserver/tablet/commitlog"
	"github.com/tabuladb/tabula/vfs"
)

// Replay calls fn, in log order, with the payload of every record of tablet
// at epoch in the log called name, from segment from on. The payload is only
// valid during the call. The log may be this one, or another server's
// (dead, or alive and fenced). A segment from..last that is missing is an
// error wrapping commitlog.ErrCorrupt: the records the manifest relies on
// are gone.
func (l *Log) Replay(name, tablet string, epoch, from uint64, fn func(payload []byte) error) error {
	if !plainName(name) {
		return fmt.Errorf("%w: a manifest names the shared log %q, which is not a plain name", commitlog.ErrCorrupt, name)
	}
	if name == l.opts.Name {
		// Our own log, still being written: read it directly; caching
		// what is still growing would only hold memory.
		return scan(l.opts.FS, Dir(l.opts.Root, name), from, nil, nil, func(seg uint64, p []byte) error {
			t, e, rest, err := parseTag(p)
			if err != nil || e != epoch || string(t) != tablet {
				return err
			}
			return fn(rest)
		})
	}
	return l.cache.replay(name, tablet, epoch, from, fn)
}

// scan reads the segments of the log in dir from segment from on,
// continuing each from the offset ends holds for it (and updating ends, if
// not nil), and calls fn with each record. It skips the segments in sealed
// and adds to it (if not nil) the segments it read to their end while a
// later one existed: their writer closed them, so they no longer change.
// It checks that segments from..the last are all there, except for the
// cache (ends not nil), which reads the segments for all tablets and checks
// for each (checkFrom) only those it needs: a segment left below a gap (its
// deletion failed and the server died before retrying) must not make the
// log unreadable.
func scan(fsys vfs.FS, dir string, from uint64, ends map[uint64]int64, sealed map[uint64]bool, fn func(seg uint64, p []byte) error) error {
	segs, err := commitlog.ListSegments(fsys, dir)
	if err != nil {
		return err
	}
	if len(segs) == 0 {
		return fmt.Errorf("%w: shared log %s holds no segment (a manifest relies on segment %d of it)", commitlog.ErrCorrupt, dir, from)
	}
	var prev uint64
	for i, n := range segs {
		if n < from {
			continue
		}
		if prev == 0 && from > 0 && n != from {
			return fmt.Errorf("%w: segment %d of shared log %s is missing (the log starts at %d)", commitlog.ErrCorrupt, from, dir, n)
		}
		if prev != 0 && n != prev+1 && ends == nil {
			return fmt.Errorf("%w: segment %d of shared log %s is missing", commitlog.ErrCorrupt, prev+1, dir)
		}
		prev = n
		if sealed[n] {
			continue
		}
		last := i == len(segs)-1
		end, err := commitlog.ReadSegment(fsys, dir, n, ends[n], last, func(p []byte) error { return fn(n, p) })
		if ends != nil {
			ends[n] = end
		}
		if err != nil {
			return fmt.Errorf("sharedlog: %w", err)
		}
		if sealed != nil && !last {
			sealed[n] = true
		}
	}
	if prev == 0 && from > 0 {
		return fmt.Errorf("%w: segment %d of shared log %s is missing (the log ends at %d)", commitlog.ErrCorrupt, from, dir, segs[len(segs)-1])
	}
	return nil
}

// cache holds the records of foreign logs, grouped by tablet, so that the
// tablets of one dead server that this server loads read its log once in
// all, not once each.
type cache struct {
	fsys  vfs.FS
	root  string
	limit int64

	mu   sync.Mutex
	logs map[string]*cachedLog
}

// cachedLog is what was read of one foreign log.
type cachedLog struct {
	mu      sync.Mutex // held while reading or serving
	ends    map[uint64]int64
	sealed  map[uint64]bool     // segments read whole (see scan)
	recs    map[string][]record // by tablet
	served  map[string]bool     // written under both mu and cache.mu
	bytes   int64               // payload bytes held; read under cache.mu too
	lastUse time.Time
}

type record struct {
	seg     uint64
	epoch   uint64
	payload []byte
}

func newCache(fsys vfs.FS, root string, limit int64) *cache {
	return &cache{fsys: fsys, root: root, limit: limit, logs: map[string]*cachedLog{}}
}

// replay serves tablet's records of the foreign log name, reading what was
// appended to it since it was last read. A tablet served before (a second
// load of it) gets a fresh read of the whole log: its records were handed
// out and dropped.
func (c *cache) replay(name, tablet string, epoch, from uint64, fn func([]byte) error) error {
	c.mu.Lock()
	cl := c.logs[name]
	if cl == nil || cl.served[tablet] {
		if cl != nil {
			c.dropLocked(name)
		}
		cl = &cachedLog{ends: map[uint64]int64{}, sealed: map[uint64]bool{}, recs: map[string][]record{}, served: map[string]bool{}}
		c.logs[name] = cl
	}
	cl.lastUse = time.Now()
	c.mu.Unlock()

	cl.mu.Lock()
	if cl.served[tablet] {
		// A concurrent replay of the same tablet served it while this
		// one waited: start again, on a fresh read.
		cl.mu.Unlock()
		return c.replay(name, tablet, epoch, from, fn)
	}
	defer cl.mu.Unlock()
	var added int64
	err := scan(c.fsys, Dir(c.root, name), 0, cl.ends, cl.sealed, func(seg uint64, p []byte) error {
		t, e, rest, err := parseTag(p)
		if err != nil {
			return err
		}
		cl.recs[string(t)] = append(cl.recs[string(t)], record{seg: seg, epoch: e, payload: bytes.Clone(rest)})
		added += int64(len(rest))
		return nil
	})
	if err == nil {
		err = checkFrom(cl.ends, name, from)
	}
	c.account(name, cl, added)
	if err != nil {
		c.drop(name, cl)
		return err
	}
	var freed int64
	for _, r := range cl.recs[tablet] {
		if r.epoch == epoch && r.seg >= from {
			if err := fn(r.payload); err != nil {
				return err
			}
		}
		freed += int64(len(r.payload))
	}
	delete(cl.recs, tablet)
	c.mu.Lock()
	cl.served[tablet] = true // under both locks: replay reads it under either
	c.mu.Unlock()
	c.account(name, cl, -freed)
	return nil
}

// checkFrom fails if a segment from segment from (0: the first) to the last
// was never seen in the log (read from 0, so every segment present was
// seen).
func checkFrom(ends map[uint64]int64, name string, from uint64) error {
	first, last := uint64(0), uint64(0)
	for n := range ends {
		if first == 0 || n < first {
			first = n
		}
		last = max(last, n)
	}
	if from == 0 {
		from = first
	}
	for n := from; n <= max(from, last); n++ {
		if _, ok := ends[n]; !ok {
			return fmt.Errorf("%w: segment %d of shared log %s is missing", commitlog.ErrCorrupt, n, name)
		}
	}
	return nil
}

// account adds delta to cl's bytes and evicts the least recently used logs
// while the cache is over its limit (cl last: it is the one in use).
func (c *cache) account(name string, cl *cachedLog, delta int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl.bytes += delta
	for c.totalLocked() > c.limit {
		victim, oldest := "", time.Time{}
		for n, o := range c.logs {
			if o != cl && (victim == "" || o.lastUse.Before(oldest)) {
				victim, oldest = n, o.lastUse
			}
		}
		if victim == "" {
			victim = name // this log alone is over the limit: do not keep it
		}
		c.dropLocked(victim)
	}
}

func (c *cache) totalLocked() int64 {
	var n int64
	for _, o := range c.logs {
		n += o.bytes
	}
	return n
}

// drop removes cl from the cache if it is still there.
func (c *cache) drop(name string, cl *cachedLog) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.logs[name] == cl {
		c.dropLocked(name)
	}
}

func (c *cache) dropLocked(name string) { delete(c.logs, name) }

// dropIdle drops the logs last used before cutoff.
func (c *cache) dropIdle(cutoff time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for n, o := range c.logs {
		if o.lastUse.Before(cutoff) {
			c.dropLocked(n)
		}
	}
}

func (c *cache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.logs = map[string]*cachedLog{}
}
