package tablet

import (
	"bytes"
	"io"
	"log/slog"
	"sort"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/sharedlog"
	"github.com/tabuladb/tabula/sstable"
	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/wal"
)

// Options configure a Tablet. The zero value with Dir set is valid (a tablet
// with no families accepts no writes until SetFamilies).
type Options struct {
	// Dir is the tablet's folder, created if missing. Layout:
	// MANIFEST-<epoch>-v<n> (package manifest), log/ (its own commit log
	// segments, without Log), <family>/NNNNNN.sst. It must be set.
	Dir string
	// FS holds the tablet's files (vfs package): its manifest, commit log
	// and SSTables, and the folders of its split children. The default is
	// the local disk (vfs.Default).
	FS vfs.FS
	// Families is the table's current schema. The default is none.
	Families []families.Family
	// Start and End bound the tablet's rows to [Start, End); nil means
	// unbounded. They are stored in the manifest when the tablet is created;
	// on reopen the manifest's range wins. The default is unbounded.
	Start, End []byte
	// SyncMode says when a write is durable: always, interval, none or
	// buffered (wal.SyncMode says what each promises). The default is
	// always.
	SyncMode wal.SyncMode
	// SyncInterval is the fsync period of SyncMode interval. The default is
	// 100ms.
	SyncInterval time.Duration
	// MemtableSize is the memtable size past which the tablet flushes.
	// Writers wait while the active memtable holds this much and the
	// previous one is still being flushed (stall.go). The default is
	// 64 MiB.
	MemtableSize int64
	// Cache is the block cache shared by every tablet of a server. The
	// default is a private 32 MiB cache.
	Cache *sstable.Cache
	// Memory is the server-wide memtable budget. The default is a private
	// budget (soft 256 MiB, hard 512 MiB).
	Memory *MemoryBudget
	// Compactions bounds concurrent compactions across tablets. The default
	// is a private limiter of 1.
	Compactions *Limiter
	// L0Trigger: a family with more sorted runs than this (groups of
	// SSTables with disjoint rows, runs.go; files flushed in key order are
	// one) gets a merging compaction (of runs of similar size; see
	// pickTiered). The default is 8: fewer makes compactions rewrite data
	// more often than the log of its size.
	L0Trigger int
	// ManifestFormat is the manifest format version the tablet writes:
	// 0 (the default) the newest, 2, whose files record their key ranges
	// so that a load opens none of them; 1 what releases before it read
	// (every file is then opened at load, as they did). Set 1 while
	// servers of such a release may still load this cluster's tablets: a
	// rolling upgrade, or before a rollback (docs/OPERATIONS.md "Upgrading
	// in place").
	ManifestFormat int
	// TargetFileSize is where a compaction ends an output SSTable and
	// starts another (at the next row once the file holds this many
	// bytes), as pebble's TargetFileSize does: a file's bloom filter and
	// index, built in memory while it is written and held while it is
	// open, then grow with this size and not with the family's data
	// (docs/BENCHMARKS.md "Compaction outputs cut into files of a target
	// size"). The outputs have disjoint rows and make one sorted run. The
	// default is 64 MiB; a negative size never cuts (one output file).
	TargetFileSize int64
	// Clock returns microseconds since the epoch; it stamps server
	// timestamps and evaluates TTLs. The default is time.Now().UnixMicro.
	Clock func() int64
	// DisableBackgroundWork turns off automatic flushes and compactions
	// (tests drive Flush and Compact); writers then never stall on a full
	// memtable. The default is false.
	DisableBackgroundWork bool
	// Logger receives background errors. The default discards.
	Logger *slog.Logger
	// Events, when set, is told of every flush and compaction (events.go):
	// the server counts them for its metrics. The default is nil.
	Events *Events
	// Guard, when set, is asked immediately before every durable change to
	// the tablet's shared files (manifest saves, deleting obsolete SSTables
	// and commit log segments) and before a flush or compaction starts; if
	// it returns an error the engine abandons that work without touching the
	// manifest and fails it with an error wrapping ErrGuardRefused and the
	// guard's error. A tablet server passes one that refuses once its lease
	// is no longer safe (see guard.go). It must be cheap and safe for
	// concurrent use. The default is nil: always allowed.
	Guard func() error
	// Create lets Open create a brand-new, empty tablet when Dir holds no
	// manifest. Without it such a folder is an error wrapping ErrNoTablet:
	// a tablet whose files are gone must never come back empty. The
	// default is false.
	Create bool
	// OnFailure, when set, is called once, the first time the tablet's
	// commit log or manifest cannot be written (an I/O error, a full
	// disk): from then on the tablet takes no writes and cannot flush, so
	// its owner should take it out of service and let the next owner
	// replay its log. It is called without engine locks held and must not
	// block. Write-guard refusals are not failures. The default is nil.
	OnFailure func(error)
	// Epoch is the owner's epoch of the tablet (the tablet server passes
	// the assignment's). With an epoch the engine is fenced against older
	// owners that may still be running (docs/OWNERSHIP.md): it refuses to
	// open a folder holding a manifest of a newer epoch, it names its
	// manifest by the epoch and seals the log it replayed (a flush at open,
	// so no older owner's late log writes are ever replayed), and it
	// numbers new files from Epoch<<32 up, so they never collide with files
	// an older owner is still writing. The default is 0: no fencing (one
	// process owns the folder, as in tests and tools).
	Epoch int64
	// Log, when set, is the tablet server's shared commit log: the tablet
	// writes its records there (tagged with Name) instead of into its own
	// log/ folder, so that concurrent writers of all tablets share one
	// fsync or object PUT. The manifest then names the log and the
	// segment its unflushed records start in, and the engine seals at
	// every open (flushes what it replayed and writes a manifest naming
	// this log), whatever the Epoch. The default is nil: the tablet's own
	// log. A manifest that names a shared log needs one to be opened.
	Log *sharedlog.Log
	// Name identifies the tablet's records in the shared log; it must be
	// the same for every owner of the tablet (the server uses
	// "<table>/<tablet id>"). The default is Dir.
	Name string
}

func (o Options) withDefaults() (Options, error) {
	if o.Dir == "" {
		return o, cell.Invalidf("tablet: Options.Dir is empty")
	}
	if o.Epoch < 0 || o.Epoch >= 1<<31 {
		return o, cell.Invalidf("tablet: Options.Epoch %d is outside [0, 2^31)", o.Epoch)
	}
	if o.SyncMode > wal.SyncBuffered {
		return o, cell.Invalidf("tablet: unknown sync mode %d", o.SyncMode)
	}
	if o.MemtableSize < 0 || o.L0Trigger < 0 || o.SyncInterval < 0 {
		return o, cell.Invalidf("tablet: negative MemtableSize, L0Trigger or SyncInterval")
	}
	if o.ManifestFormat < 0 || o.ManifestFormat > 2 {
		return o, cell.Invalidf("tablet: manifest format %d: this release writes 1 or 2 (0: the newest)", o.ManifestFormat)
	}
	if o.Start != nil && o.End != nil && bytes.Compare(o.Start, o.End) >= 0 {
		return o, cell.Invalidf("tablet: range start %q is not before end %q", o.Start, o.End)
	}
	o.FS = vfs.Or(o.FS)
	if o.Name == "" {
		o.Name = o.Dir
	}
	if o.SyncInterval == 0 {
		o.SyncInterval = 100 * time.Millisecond
	}
	if o.MemtableSize == 0 {
		o.MemtableSize = 64 << 20
	}
	if o.Cache == nil {
		o.Cache = sstable.NewCache(32 << 20)
	}
	if o.Memory == nil {
		o.Memory = NewMemoryBudget(256<<20, 512<<20)
	}
	if o.Compactions == nil {
		o.Compactions = NewLimiter(1)
	}
	if o.L0Trigger == 0 {
		o.L0Trigger = defaultL0Trigger
	}
	if o.TargetFileSize == 0 {
		o.TargetFileSize = defaultTargetFileSize
	}
	if o.Clock == nil {
		o.Clock = func() int64 { return time.Now().UnixMicro() }
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o, nil
}

// defaultTargetFileSize is Options.TargetFileSize's default.
const defaultTargetFileSize = 64 << 20

// schema is an immutable view of the table's families.
type schema struct {
	byName map[string]*families.Family
	names  []string // sorted
}

func newSchema(fams []families.Family) (*schema, error) {
	s := &schema{byName: make(map[string]*families.Family, len(fams))}
	for i := range fams {
		f := fams[i]
		if err := f.Validate(); err != nil {
			return nil, err
		}
		if s.byName[f.Name] != nil {
			return nil, cell.Invalidf("family %s is given twice", f.Name)
		}
		s.byName[f.Name] = &f
		s.names = append(s.names, f.Name)
	}
	sort.Strings(s.names)
	return s, nil
}

func writerOptions(f *families.Family) sstable.WriterOptions {
	return sstable.WriterOptions{Compression: f.Compression, Bloom: f.Bloom, BlockSize: f.BlockSize}
}

// seals reports whether Open seals the tablet (fence.go): an owner at an
// epoch, or on a shared log.
// manifestState is st as the tablet saves it: without its files' keys
// when ManifestFormat is 1.
func (o Options) manifestState(st manifest.State) manifest.State {
	if o.ManifestFormat == 1 {
		return st.WithoutKeys()
	}
	return st
}

func (o Options) seals() bool { return o.Epoch > 0 || o.Log != nil }
