package tabletserver

import (
	"crypto/tls"
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/wal"
)

// DefaultSplitThreshold is the tablet size past which a tablet is split
// when neither the table schema nor Options say otherwise.
const DefaultSplitThreshold = 256 << 20

// DefaultHotSplitRPS is the request rate past which a tablet that stays
// there splits by load. A tablet at 2,000 requests/s for 30 s takes a
// large share of one server (the cluster benchmark measured about 5,000
// random writes/s and 17,000 random reads/s per server,
// docs/BENCHMARKS.md), and halving it lets the balancer move half away;
// ordinary tablets stay well below it, so they are not cut into slivers.
const DefaultHotSplitRPS = 2000

// Options configure a Server. The zero value with DataDir and Etcd (or
// Store) set is valid.
type Options struct {
	// ID names the server in etcd (servers/<id>). The default is the
	// advertised address.
	ID string
	// ListenAddr is the gRPC listen address. The default is "127.0.0.1:0".
	ListenAddr string
	// AdvertiseAddr is the address clients and the master dial. The
	// default is the listener's address.
	AdvertiseAddr string
	// DataDir is the storage root; tablets live in
	// <DataDir>/tables/<table>/<tablet-id>/. It must be set.
	DataDir string
	// FS holds DataDir's files (vfs package). The default is the local
	// disk.
	FS vfs.FS
	// Etcd lists the etcd endpoints. It must be set unless Store is.
	Etcd []string
	// Store, when set, is the coordination store the server uses instead
	// of dialing Etcd: tests hand it etcd's in-memory twin
	// (meta/memstore). The server does not close it; whoever made it
	// closes it after the server's Close returned. Etcd must then be
	// empty (as in master.Options) and EtcdTLS is not used. WrapStore,
	// if set, wraps it as it wraps a dialed
	// client. The default is nil: dial Etcd.
	Store meta.Store
	// Cluster names the cluster; keys live under /tabula/<cluster>/. The
	// default is "default".
	Cluster string
	// Prefix, when set, is the etcd key prefix and overrides Cluster. The
	// default is empty.
	Prefix string
	// LeaseTTL is the TTL of the server's etcd lease. The server pauses
	// (serves nothing) when it has not renewed for LeaseTTL*3/4, and
	// resumes if the same lease is renewed later (lease.go). The default
	// is 10s.
	LeaseTTL time.Duration
	// MemtableSize is each tablet's flush threshold. The default is the
	// engine's (64 MiB).
	MemtableSize int64
	// MemtableSoftLimit is the server-wide memtable total past which
	// writers wait for flushes. The default is 256 MiB.
	MemtableSoftLimit int64
	// MemtableHardLimit is the server-wide memtable total past which
	// writes fail with RESOURCE_EXHAUSTED. The default is 512 MiB.
	MemtableHardLimit int64
	// MaxLogBytes is the size of the shared commit log past which the
	// tablets holding its oldest segment are flushed, so it can be
	// deleted. The default (0) is 1 GiB.
	MaxLogBytes int64
	// SpillDir is a local folder for the temporary file in which the
	// recovery of another server's tablets keeps that server's log
	// records past half of the foreign-log cache's budget, so that the
	// log is read once (sharedlog.Options.SpillDir; the file is unlinked
	// and may grow to the size of that log). The default is the system's
	// temporary folder.
	SpillDir string
	// CacheBytes is the size of the server's block cache. The default is
	// 64 MiB.
	CacheBytes int64
	// Compactions bounds concurrent compactions on the server. The default
	// is 1.
	Compactions int
	// SyncMode is the commit log sync mode: "always", "interval", "none"
	// or "buffered" (wal.SyncMode says what each promises). The default is
	// "always".
	SyncMode string
	// SplitThreshold is the tablet size past which a tablet is split when
	// its table's schema gives no threshold. The default is 256 MiB.
	SplitThreshold int64
	// SplitCheckInterval is how often the background loop looks for
	// tablets to split; negative disables the loop. The default is 5s.
	SplitCheckInterval time.Duration
	// LoadWindow is how often the server closes every tablet's load
	// window: the rates ServerStats reports (and the master balances and
	// draws its heatmap by) cover the last closed window. Negative
	// disables the loop (tests roll windows themselves). The default is
	// 10s.
	LoadWindow time.Duration
	// HotSplitRPS is the request rate (reads plus writes per second of a
	// load window) at or above which a tablet is hot: a tablet hot in each
	// of the last HotSplitWindows windows splits at the row that halves
	// its sampled load (docs/OPERATIONS.md "Load-based splits"). Negative
	// turns load splits off. The default is DefaultHotSplitRPS.
	HotSplitRPS float64
	// HotSplitWindows is how many consecutive hot load windows make a
	// tablet split by load. The default is 3 (30s at the default
	// LoadWindow).
	HotSplitWindows int
	// HotSplitCooldown is how long, in load-window time, the children of
	// a load split, or a tablet whose load sits on one row, make no load
	// split. The default is 5 minutes.
	HotSplitCooldown time.Duration
	// ShutdownTimeout bounds how long Close waits for in-flight RPCs
	// before cutting them off, and then each tablet's flush on its own
	// (tablets are flushed several at once, lifecycle.go). The default is
	// 10s.
	ShutdownTimeout time.Duration
	// MaxScans bounds the ReadRows streams the server runs at once; past
	// it a new one is refused with RESOURCE_EXHAUSTED (clients back off
	// and retry). Each stream holds up to about readBatchBytes of rows
	// waiting for its reader plus its iterator's blocks, so this bounds
	// the memory that readers who stop reading can pin. The default is
	// 256.
	MaxScans int
	// ScanStallTimeout ends a scan whose client has read nothing for this
	// long (one message's send blocked on flow control): the stream fails
	// with UNAVAILABLE, which the client's retry resumes after the last
	// row it got, and the scan's slot, iterator and buffers are freed, so
	// clients that stop reading cannot hold all MaxScans slots. The
	// default is 1 minute.
	ScanStallTimeout time.Duration
	// IngestIdleTimeout ends a bulk load call (BulkLoad.IngestRows) whose
	// client has sent nothing for this long: the tablet's compactions
	// wait while a call streams (docs/CONTRACTS.md §3 "Bulk load"), so a
	// client that stalls must not hold them off for good. The call fails
	// with UNAVAILABLE and loads nothing; the client's retry sends the
	// share again. The default is 1 minute.
	IngestIdleTimeout time.Duration
	// PauseRenewals is a fault hook for tests: while it returns true the
	// server sends no lease renewals and does not register again, as if
	// etcd were unreachable. The default is nil (never paused).
	PauseRenewals func() bool
	// WrapStore is a fault hook for tests: the server talks to etcd
	// through WrapStore(client), or WrapStore(Store) when Store is set
	// (meta/faultstore fails, delays or drops chosen calls). The default
	// is nil (the client itself).
	WrapStore func(meta.Store) meta.Store
	// DisableBackgroundWork turns off the engines' automatic flushes and
	// compactions (tests). The default is false.
	DisableBackgroundWork bool
	// Logger receives the server's log. The default discards.
	Logger *slog.Logger
	// Metrics, when set, receives the server's Prometheus series
	// (metrics.go; docs/OPERATIONS.md "Metrics"): the gRPC interceptors,
	// the engine's flush, compaction and commit log events, and the
	// server's state read at scrape time. They are unregistered by Close.
	// The default is nil: no series and no instrumentation at all.
	Metrics prometheus.Registerer
	// MetricsTopTablets is how many of the server's largest tablets, and
	// how many of its busiest, get per-tablet series (tabula_tablet_*);
	// negative means none. The
	// default is DefaultTopTablets (20).
	MetricsTopTablets int

	// Security (docs/OPERATIONS.md "Security"). All nil/false by default:
	// plaintext and no authentication.

	// EtcdTLS, when set, is the TLS client configuration for etcd.
	EtcdTLS *tls.Config
	// ServerTLS, when set, serves the gRPC port over TLS; client
	// certificates signed by its ClientCAs are verified when given. With
	// it set, the master-only calls (LoadTablet, UnloadTablet, ...) accept
	// only a caller whose certificate names the master.
	ServerTLS *tls.Config
	// Auth requires every call to authenticate (a bearer token or a client
	// certificate) and checks the caller's role (auth package).
	Auth bool

	// EtcdPageSize is how many keys each page of the server's reads of
	// its tablets from etcd holds (at start, after a new lease, after a
	// broken watch): the reads are paged so that no response grows with
	// the cluster. The default is meta.DefaultPageSize (1,000).
	EtcdPageSize int

	// LoadParallelism is how many tablets of the master's batched loads
	// (LoadTablets) the server opens at once; the default is
	// DefaultLoadParallelism. A dead server's tablets reach the servers
	// that take them over in such batches (docs/OWNERSHIP.md "Loads in
	// batches").
	LoadParallelism int

	// ManifestFormat is the manifest format version the server's tablets
	// write (tablet.Options.ManifestFormat): 0 or 2 the newest, 1 what
	// releases before format 2 read, for a rolling upgrade from one.
	ManifestFormat int

	// testHookBatchLoad, set by tests, runs in each tablet's load of a
	// batch once it holds its slot of LoadParallelism.
	testHookBatchLoad func()

	// testHookRenewed, set by tests, runs after each renewal etcd accepted
	// has been applied to the lease state (leaseMu held), with the
	// server's serving deadline (safeUntil) after it.
	testHookRenewed func(safeUntil time.Duration)
}

func (o Options) withDefaults() (Options, error) {
	if o.DataDir == "" {
		return o, cell.Invalidf("tabletserver: Options.DataDir is empty")
	}
	if len(o.Etcd) == 0 && o.Store == nil {
		return o, cell.Invalidf("tabletserver: Options.Etcd is empty and no Options.Store is given")
	}
	if len(o.Etcd) != 0 && o.Store != nil {
		return o, cell.Invalidf("tabletserver: Options.Etcd and Options.Store are both set: the server would use one and ignore the other")
	}
	if o.LeaseTTL < 0 || o.MemtableSize < 0 || o.MemtableSoftLimit < 0 || o.MemtableHardLimit < 0 || o.MaxLogBytes < 0 ||
		o.CacheBytes < 0 || o.Compactions < 0 || o.SplitThreshold < 0 || o.ShutdownTimeout < 0 ||
		o.HotSplitWindows < 0 || o.HotSplitCooldown < 0 || o.EtcdPageSize < 0 || o.LoadParallelism < 0 {
		return o, cell.Invalidf("tabletserver: negative size, count or duration in Options")
	}
	if o.ManifestFormat < 0 || o.ManifestFormat > 2 {
		return o, cell.Invalidf("tabletserver: manifest format %d: this release writes 1 or 2 (--manifest-format)", o.ManifestFormat)
	}
	if o.Auth && o.ServerTLS == nil {
		return o, cell.Invalidf("tabletserver: authentication needs TLS (ServerTLS): tokens sent in plaintext can be read off the network")
	}
	if o.ListenAddr == "" {
		o.ListenAddr = "127.0.0.1:0"
	}
	if o.LoadParallelism == 0 {
		o.LoadParallelism = DefaultLoadParallelism
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = 10 * time.Second
	}
	if o.LeaseTTL < time.Second {
		return o, cell.Invalidf("tabletserver: LeaseTTL %s is below etcd's minimum of 1s", o.LeaseTTL)
	}
	if o.MemtableSoftLimit == 0 {
		o.MemtableSoftLimit = 256 << 20
	}
	if o.MemtableHardLimit == 0 {
		o.MemtableHardLimit = 512 << 20
	}
	if o.MemtableHardLimit < o.MemtableSoftLimit {
		return o, cell.Invalidf("tabletserver: MemtableHardLimit %d is below MemtableSoftLimit %d", o.MemtableHardLimit, o.MemtableSoftLimit)
	}
	if o.CacheBytes == 0 {
		o.CacheBytes = 64 << 20
	}
	if o.Compactions == 0 {
		o.Compactions = 1
	}
	if o.SyncMode == "" {
		o.SyncMode = "always"
	}
	if _, err := wal.ParseSyncMode(o.SyncMode); err != nil {
		return o, err
	}
	if o.SplitThreshold == 0 {
		o.SplitThreshold = DefaultSplitThreshold
	}
	if o.SplitCheckInterval == 0 {
		o.SplitCheckInterval = 5 * time.Second
	}
	if o.LoadWindow == 0 {
		o.LoadWindow = 10 * time.Second
	}
	if o.HotSplitRPS == 0 {
		o.HotSplitRPS = DefaultHotSplitRPS
	}
	if o.HotSplitRPS < 0 {
		o.HotSplitRPS = 0 // off: hotState.note keeps no window
	}
	if o.HotSplitWindows == 0 {
		o.HotSplitWindows = 3
	}
	if o.HotSplitCooldown == 0 {
		o.HotSplitCooldown = 5 * time.Minute
	}
	if o.ShutdownTimeout == 0 {
		o.ShutdownTimeout = 10 * time.Second
	}
	if o.IngestIdleTimeout <= 0 {
		o.IngestIdleTimeout = time.Minute
	}
	if o.ScanStallTimeout <= 0 {
		o.ScanStallTimeout = time.Minute
	}
	if o.MaxScans == 0 {
		o.MaxScans = 256
	}
	if o.PauseRenewals == nil {
		o.PauseRenewals = func() bool { return false }
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o, nil
}

func (o Options) layout() meta.Layout {
	if o.Prefix != "" {
		return meta.WithPrefix(o.Prefix)
	}
	return meta.NewLayout(o.Cluster)
}
