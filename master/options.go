package master

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/vfs"
)

// Options configure a master. The zero value of every field but Etcd (or
// Store) means the default.
type Options struct {
	// Etcd lists the etcd endpoints (host:port). Required unless Store is
	// set; the master dials them and closes its client on Close.
	Etcd []string
	// Store, when set, is the coordination store the master uses instead
	// of dialing Etcd (which must then be empty): a client the caller
	// dialed, or the in-memory twin (meta/memstore) that tests run on.
	// The master does not close it: whoever made it closes it after the
	// master's Close, which still ends everything the master holds on it
	// (its watches, its session's keepalive, its election key). The
	// default is nil: dial Etcd.
	Store meta.Store
	// Prefix is the etcd key prefix; it overrides Cluster. The default is
	// "/tabula/<Cluster>/".
	Prefix string
	// Cluster names the cluster in the default prefix. The default is
	// "default".
	Cluster string
	// ListenAddr is where the gRPC service listens. The default is
	// "127.0.0.1:0" (a free port).
	ListenAddr string
	// AdvertiseAddr is the address other processes use to reach this
	// master. The default is the listener's address.
	AdvertiseAddr string
	// ID names this master in logs. The default is its advertised host:port.
	ID string
	// StorageRoot, if set, is the storage root shared with the tablet
	// servers; DeleteTable then removes <root>/tables/<table>. The default is
	// "" (files are left in place).
	StorageRoot string
	// FS holds StorageRoot's files (vfs package). The default is the local
	// disk.
	FS vfs.FS
	// GCInterval is how often the leader sweeps StorageRoot for tablet
	// folders no tablet needs any more (see gc.go); a negative value turns
	// the sweep off. Without StorageRoot there is no sweep. The default is
	// 5 minutes.
	GCInterval time.Duration
	// GCGrace is how old a tablet folder and everything in it must be
	// before the sweep may delete it; it must outlast a split in progress,
	// whose children's folders exist before etcd names them. The default
	// is 10 minutes.
	GCGrace time.Duration
	// LoadInterval is how often the leader pulls every tablet server's
	// load report (ServerStats); negative turns collection off. The
	// default is 10s, the tablet servers' default load window.
	LoadInterval time.Duration
	// Merge configures the automatic merge of small, cold adjacent
	// tablets (automerge.go).
	Merge MergeOptions
	// BalanceInterval is how often the leader runs a balancing round
	// (balancer.go, docs/OPERATIONS.md "Balancing"); negative turns the
	// automatic balancer off in this master (Balance still runs a round
	// on request). The default is 15s.
	BalanceInterval time.Duration
	// BalancerMaxMoves bounds the moves of one round. The default is 10.
	BalancerMaxMoves int
	// BalancerCooldown is how long a moved tablet stays put. The default
	// is 5 minutes.
	BalancerCooldown time.Duration
	// DefaultSplitThreshold is the split threshold of tables whose schema
	// gives none; it is sent to the tablet servers with the schema. The
	// default is 256 MiB.
	DefaultSplitThreshold int64
	// SessionTTL is the TTL of the election session: a leader that cannot
	// reach etcd for this long loses leadership. Whole seconds, at least 1.
	// The default is 10s.
	SessionTTL time.Duration
	// RPCTimeout bounds each call to a tablet server but LoadTablet. The
	// default is 10s.
	RPCTimeout time.Duration
	// LoadTimeout bounds a LoadTablet call: loading replays the tablet's
	// commit log, which on an object store is one GET per group commit, so
	// it can take far longer than other calls; a load cut short is retried
	// from the start. The default is 2 minutes.
	LoadTimeout time.Duration
	// Logger receives the master's logs. The default is slog.Default().
	Logger *slog.Logger
	// Metrics, when set, receives the master's Prometheus series
	// (metrics.go; docs/OPERATIONS.md "Metrics"), unregistered by Close.
	// The default is nil: no series and no gRPC interceptors.
	Metrics prometheus.Registerer

	// Security (docs/OPERATIONS.md "Security"). All nil/false by default:
	// plaintext and no authentication.

	// EtcdTLS, when set, is the TLS client configuration for etcd.
	EtcdTLS *tls.Config
	// ServerTLS, when set, serves the gRPC port over TLS; client
	// certificates signed by its ClientCAs are verified when given.
	ServerTLS *tls.Config
	// DialTLS, when set, is the TLS client configuration for calls to
	// tablet servers; its certificate is the master's identity.
	DialTLS *tls.Config
	// BackupRunner, when set, makes the backups of the tables' backup
	// schedules (backupsched.go); without one the leader runs none. The
	// default is nil.
	BackupRunner BackupRunner
	// BackupScheduleInterval is how often the leader looks for due
	// scheduled backups, and the first wait before retrying a failed one;
	// negative turns the loop off. The default is 1 minute.
	BackupScheduleInterval time.Duration
	// now is the balancer's and the backup schedules' clock (tests set it); nil is time.Now.
	now func() time.Time
	// plan overrides the planner's weights, margin and floors (tests).
	plan PlanConfig

	// Auth requires every call to authenticate (a bearer token or a client
	// certificate) and checks the caller's role (auth package).
	Auth bool
}

const (
	defaultSplitThreshold  = 256 << 20
	defaultSessionTTL      = 10 * time.Second
	defaultRPCTimeout      = 10 * time.Second
	defaultLoadTimeout     = 2 * time.Minute
	defaultLoadInterval    = 10 * time.Second
	defaultBalanceInterval = 15 * time.Second
)

func (o *Options) fill() error {
	if len(o.Etcd) == 0 && o.Store == nil {
		return fmt.Errorf("master: Options.Etcd is required (or Options.Store)")
	}
	if len(o.Etcd) != 0 && o.Store != nil {
		return fmt.Errorf("master: Options.Etcd and Options.Store both set: the master would use one and ignore the other")
	}
	if o.Auth && o.ServerTLS == nil {
		return fmt.Errorf("master: authentication needs TLS (ServerTLS): tokens sent in plaintext can be read off the network")
	}
	if o.ListenAddr == "" {
		o.ListenAddr = "127.0.0.1:0"
	}
	if o.DefaultSplitThreshold == 0 {
		o.DefaultSplitThreshold = defaultSplitThreshold
	}
	if o.DefaultSplitThreshold < 0 {
		return fmt.Errorf("master: Options.DefaultSplitThreshold %d is negative", o.DefaultSplitThreshold)
	}
	if o.SessionTTL == 0 {
		o.SessionTTL = defaultSessionTTL
	}
	if o.SessionTTL < time.Second {
		return fmt.Errorf("master: Options.SessionTTL %v is below etcd's 1s lease granularity", o.SessionTTL)
	}
	if o.GCInterval == 0 {
		o.GCInterval = defaultGCInterval
	}
	o.Merge.fill()
	if o.LoadInterval == 0 {
		o.LoadInterval = defaultLoadInterval
	}
	if o.BalanceInterval == 0 {
		o.BalanceInterval = defaultBalanceInterval
	}
	if o.BalancerMaxMoves < 0 {
		return fmt.Errorf("master: Options.BalancerMaxMoves %d is negative", o.BalancerMaxMoves)
	}
	if o.BalancerCooldown < 0 {
		return fmt.Errorf("master: Options.BalancerCooldown %v is negative", o.BalancerCooldown)
	}
	if o.BackupScheduleInterval == 0 {
		o.BackupScheduleInterval = defaultBackupScheduleInterval
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.GCGrace == 0 {
		o.GCGrace = defaultGCGrace
	}
	if o.GCGrace < 0 {
		return fmt.Errorf("master: Options.GCGrace %v is negative", o.GCGrace)
	}
	if o.LoadTimeout <= 0 {
		o.LoadTimeout = defaultLoadTimeout
	}
	if o.RPCTimeout <= 0 {
		o.RPCTimeout = defaultRPCTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return nil
}

func (o *Options) layout() meta.Layout {
	if o.Prefix != "" {
		return meta.WithPrefix(o.Prefix)
	}
	return meta.NewLayout(o.Cluster)
}

func (o *Options) fillAddrs(l net.Listener) {
	if o.AdvertiseAddr == "" {
		o.AdvertiseAddr = l.Addr().String()
	}
	if o.ID == "" {
		o.ID = o.AdvertiseAddr
	}
}
