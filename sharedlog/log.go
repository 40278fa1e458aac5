package sharedlog

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/wal"
)

// ErrExists is returned by Open for a log name whose folder holds
// segments: a log is only ever appended by the process that created it.
var ErrExists = errors.New("sharedlog: the log exists")

// Options configure a Log.
type Options struct {
	// FS holds the logs; the default is the local disk.
	FS vfs.FS
	// Root is the storage root; the log lives in Dir(Root, Name).
	Root string
	// Name names this log. It must be new: a log is only ever appended
	// by the process that created it (the server uses its etcd lease ID,
	// unique per incarnation).
	Name string
	// SyncMode, SyncInterval and SegmentSize are the wal options
	// of the log's segments.
	SyncMode     wal.SyncMode
	SyncInterval time.Duration
	SegmentSize  int64
	// OnSync is the wal option: called after every fsync of the
	// log with the group it covered. The default is nil.
	OnSync func(wal.SyncEvent)
	// MaxBytes is the size of live segments past which OnPressure is
	// called. The default is 1 GiB.
	MaxBytes int64
	// OnPressure, if set, is called (in its own goroutine) with the
	// tablets whose unflushed records hold the oldest live segment, once
	// per oldest segment, while the log is larger than MaxBytes: flushing
	// them lets the log delete that segment.
	OnPressure func(tablets []string)
	// CacheBytes bounds the records of other logs kept for recovery. The
	// default is 256 MiB.
	CacheBytes int64
	// SpillDir is the local folder where the records of another server's
	// log that do not fit in CacheBytes go while its tablets are
	// recovered here, so that its log is read once (a temporary file,
	// removed when the log leaves the cache; it may grow to the size of
	// that log). The default is the system's temporary folder.
	SpillDir string
	// CacheIdle is how long a foreign log's cached records are kept
	// after their last use. The default is two minutes.
	CacheIdle time.Duration
	// Logger receives warnings; the default discards them.
	Logger *slog.Logger
}

const (
	defaultMaxBytes   = 1 << 30
	defaultCacheBytes = 256 << 20
	defaultCacheIdle  = 2 * time.Minute
	// pressureEvery is how many writes pass between size checks.
	pressureEvery = 256
)

// Log is a tablet server's shared commit log. It is safe for concurrent use.
type Log struct {
	opts  Options
	dir   string
	cl    *wal.Log
	cache *cache

	writes atomic.Uint64

	mu           sync.Mutex
	pins         map[pinKey]uint64 // oldest segment each attached tablet still needs
	pressureSeg  uint64            // the oldest segment OnPressure was last called for
	pressureSize int64             // the log's size then
	stopJanitor  chan struct{}
	janitorDone  chan struct{}
	closeOnce    sync.Once
	closeErr     error
}

type pinKey struct {
	tablet string
	epoch  uint64
}

// Open creates the log Options.Name under Options.Root and starts its first
// segment. A log of that name must not exist yet.
func Open(opts Options) (*Log, error) {
	if !plainName(opts.Name) {
		return nil, cell.Invalidf("sharedlog: log name %q is not a plain name", opts.Name)
	}
	opts.FS = vfs.Or(opts.FS)
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = defaultMaxBytes
	}
	if opts.CacheBytes <= 0 {
		opts.CacheBytes = defaultCacheBytes
	}
	if opts.CacheIdle <= 0 {
		opts.CacheIdle = defaultCacheIdle
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	dir := Dir(opts.Root, opts.Name)
	segs, err := wal.ListSegments(opts.FS, dir)
	if err != nil {
		return nil, err
	}
	if len(segs) > 0 {
		return nil, fmt.Errorf("%w: %s already has segments: another process wrote it; every server incarnation needs a new name", ErrExists, dir)
	}
	cl, err := wal.Open(wal.Options{Dir: dir, FS: opts.FS, SyncMode: opts.SyncMode,
		SyncInterval: opts.SyncInterval, SegmentSize: opts.SegmentSize, OnSync: opts.OnSync})
	if err != nil {
		return nil, err
	}
	l := &Log{opts: opts, dir: dir, cl: cl, pins: map[pinKey]uint64{},
		cache:       newCache(opts.FS, opts.Root, opts.CacheBytes, opts.SpillDir),
		stopJanitor: make(chan struct{}), janitorDone: make(chan struct{})}
	go l.janitor()
	return l, nil
}

// Name returns the log's name, as manifests record it.
func (l *Log) Name() string { return l.opts.Name }

// Size returns the bytes in the log's live segments.
func (l *Log) Size() int64 { return l.cl.Size() }

// Attach returns the handle through which the tablet called name, owned
// at epoch, writes to the log. Its pin starts at the active segment (or
// stays lower if the same tablet and epoch attached before and left
// records unflushed).
func (l *Log) Attach(tablet string, epoch uint64) *Handle {
	seg := l.cl.Segment()
	l.mu.Lock()
	k := pinKey{tablet, epoch}
	if old, ok := l.pins[k]; !ok || seg < old {
		l.pins[k] = seg
	}
	l.mu.Unlock()
	return &Handle{l: l, key: k, tag: appendTag(nil, tablet, epoch)}
}

// Close closes the log. Records of tablets that did not flush stay in its
// segments for their next owner.
func (l *Log) Close() error {
	l.closeOnce.Do(func() {
		close(l.stopJanitor)
		<-l.janitorDone
		l.closeErr = l.cl.Close()
		l.cache.clear()
	})
	return l.closeErr
}

// setPin moves k's pin to seg, drops the pins of older epochs of the same
// tablet (this owner's manifest supersedes theirs), and deletes the
// segments no pin needs.
func (l *Log) setPin(k pinKey, seg uint64, drop bool) error {
	l.mu.Lock()
	if drop {
		delete(l.pins, k)
	} else {
		l.pins[k] = seg
		for o := range l.pins {
			if o.tablet == k.tablet && o.epoch < k.epoch {
				delete(l.pins, o)
			}
		}
	}
	l.mu.Unlock()
	return l.trim()
}

// trim deletes the segments below every pin.
func (l *Log) trim() error {
	l.mu.Lock()
	low := l.cl.Segment()
	for _, s := range l.pins {
		low = min(low, s)
	}
	l.mu.Unlock()
	if err := l.cl.RemoveBefore(low); err != nil && !errors.Is(err, wal.ErrClosed) {
		return err
	}
	return nil
}

// checkPressure calls OnPressure when the log is past MaxBytes: once per
// oldest pinned segment, and again each time the log grew by another
// quarter of MaxBytes while that segment stayed pinned (its pin may belong
// to a tablet that was closed unflushed and can be released only later).
func (l *Log) checkPressure() {
	if l.opts.OnPressure == nil || l.writes.Add(1)%pressureEvery != 0 {
		return
	}
	size := l.cl.Size()
	if size <= l.opts.MaxBytes {
		return
	}
	l.mu.Lock()
	low := uint64(0)
	for _, s := range l.pins {
		if low == 0 || s < low {
			low = s
		}
	}
	var names []string
	if low != 0 && (low != l.pressureSeg || size > l.pressureSize+l.opts.MaxBytes/4) {
		l.pressureSeg, l.pressureSize = low, size
		for k, s := range l.pins {
			if s == low {
				names = append(names, k.tablet)
			}
		}
	}
	l.mu.Unlock()
	if len(names) == 0 {
		return
	}
	slices.Sort(names)
	names = slices.Compact(names)
	l.opts.Logger.Info("shared commit log is large: flushing the tablets holding its oldest segment",
		"log", l.opts.Name, "bytes", l.cl.Size(), "segment", low, "tablets", len(names))
	go l.opts.OnPressure(names)
}

// janitor drops cached foreign logs that were not used for CacheIdle.
func (l *Log) janitor() {
	defer close(l.janitorDone)
	tick := time.NewTicker(max(l.opts.CacheIdle/4, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-l.stopJanitor:
			return
		case now := <-tick.C:
			l.cache.dropIdle(now.Add(-l.opts.CacheIdle))
		}
	}
}

// plainName reports whether name is one plain path element.
func plainName(name string) bool {
	return name != "" && name != "." && name != ".." && filepath.Base(name) == name && filepath.ToSlash(name) == name
}

// Err returns the error that poisoned the log (a failed write or fsync), or
// nil. A poisoned log takes no more records: its owner starts another.
func (l *Log) Err() error { return l.cl.Err() }

// Release drops the pins the tablet holds at epochs up to epoch: its
// records there are no longer needed, because an owner at a newer epoch has
// saved a manifest that names another log or a later point, or the tablet
// is gone. The server calls it for tablets it closed unflushed (failed,
// fenced, or of a deleted table), which otherwise pin the log forever.
func (l *Log) Release(tablet string, epoch uint64) error {
	l.mu.Lock()
	var any bool
	for k := range l.pins {
		if k.tablet == tablet && k.epoch <= epoch {
			delete(l.pins, k)
			any = true
		}
	}
	l.mu.Unlock()
	if !any {
		return nil
	}
	return l.trim()
}
