// Package devcluster runs a whole Tabula cluster inside one process: an
// embedded etcd, one master and N tablet servers on loopback, with every
// byte of state under one directory so that a restart in the same
// directory finds its tables again. `tabula dev` is a thin wrapper around
// it; tests use it to get a real cluster in a few seconds.
//
//	c, err := devcluster.Start(ctx, devcluster.Config{Dir: "tabula-data"})
//	if err != nil { ... }
//	defer c.Close()
//	cli, err := client.NewClient(ctx, c.MasterAddr())
//
// Layout of Dir:
//
//	Dir/etcd/         the embedded etcd's data
//	Dir/etcd.addrs    the etcd client and peer addresses, reused on restart
//	Dir/data/         the tablet servers' shared storage root (tables/...)
package devcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tabuladb/tabula/backup/schedrun"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/gateway"
	"github.com/tabuladb/tabula/internal/embedetcd"
	"github.com/tabuladb/tabula/internal/seaweed"
	"github.com/tabuladb/tabula/master"
	"github.com/tabuladb/tabula/metrics"
	"github.com/tabuladb/tabula/tabletserver"
	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/vfs/backend"
)

// ErrConfig marks a Config that cannot be used.
var ErrConfig = errors.New("devcluster: bad config")

// Config says where the dev cluster keeps its state and how it is sized.
// The zero value of every field but Dir means the default.
type Config struct {
	// Dir holds all state (etcd data and tablet storage). Required.
	Dir string
	// Servers is the number of tablet servers, named "ts-1".."ts-N" so
	// their identity survives restarts. The default is 3.
	Servers int
	// MasterAddr is the master's listen address. The default is
	// "127.0.0.1:0" (a free port); the CLI passes "127.0.0.1:7100".
	MasterAddr string
	// EtcdAddr is the embedded etcd's client address. The default is the
	// address used by the previous run in Dir, else a free port.
	EtcdAddr string
	// Cluster names the etcd key prefix /tabula/<cluster>/. The default is
	// "default".
	Cluster string
	// LeaseTTL is the tablet servers' lease TTL and the master's election
	// session TTL. The default is 10s.
	LeaseTTL time.Duration
	// MemtableSize is each tablet's memtable flush size in bytes. The
	// default is the tablet server's default.
	MemtableSize int64
	// CacheBytes is each server's block cache size in bytes. The default
	// is the tablet server's default.
	CacheBytes int64
	// SplitThreshold is the tablet size in bytes past which tablets
	// split. The default is the servers' and master's default (256 MiB).
	SplitThreshold int64
	// SyncMode is the commit log sync mode: always, interval, none or
	// buffered. The default is the tablet server's default ("always").
	SyncMode string
	// LoadWindow, HotSplitRPS, HotSplitWindows and HotSplitCooldown are
	// the tablet servers' load windows and load-split settings, as in
	// tabletserver.Options (negative HotSplitRPS: no load splits). The
	// defaults are the tablet server's.
	LoadWindow       time.Duration
	HotSplitRPS      float64
	HotSplitWindows  int
	HotSplitCooldown time.Duration
	// NoFsync turns off etcd's fsyncs (tests only). The default is false.
	NoFsync bool
	// Logger receives the components' logs. The default discards them.
	Logger *slog.Logger
	// TLS secures every port with a local CA generated in Dir/tls (kept
	// and reused across restarts): etcd, the master and the tablet
	// servers serve TLS and verify each other's certificates. Clients
	// need ClientTLS. The default is plaintext on loopback.
	TLS bool
	// Storage, when set, keeps the tablets on an object store
	// (s3://BUCKET[/PREFIX]?endpoint=..., vfs/backend) instead of
	// Dir/data; each tablet server then spools its uploads in Dir/ts-N.
	// LocalStore ("s3") starts a SeaweedFS for the cluster, its data in
	// Dir/seaweed (the weed binary of `make tools`, TABULA_WEED, or weed
	// on the PATH). The default is Dir/data on the local disk.
	Storage string
	// Auth (implies TLS) requires every call to authenticate and checks
	// roles; the cluster's first admin, "tabula-admin", gets a token
	// (AdminToken, also in Dir/admin.token) and the admin role on "*".
	// The default is off.
	Auth bool
	// GatewayAddr, when set, starts a Cloud Bigtable API gateway
	// (package gateway) on that address, e.g. "127.0.0.1:8086" (the
	// emulator's usual port; port 0 picks one). With Auth every call
	// through it must carry a Tabula token and runs with that caller's
	// roles (gateway.Options.CallerAuth). The default is no gateway; the
	// CLI starts one.
	GatewayAddr string
	// GatewayTLS (implies TLS) makes the gateway serve TLS with the
	// dev CA's gateway certificate (tabula-gateway, valid for 127.0.0.1,
	// ::1 and localhost) and verify callers' client certificates against
	// the dev CA: with Auth, a caller may then authenticate with a
	// certificate (PKI().Issue makes one for a principal), whose common
	// name the gateway acts for. The default is plaintext, as the
	// emulator.
	GatewayTLS bool
	// Metrics, when set, receives every component's Prometheus series,
	// each with the constant label server="master", "ts-1".."ts-N" or
	// "gateway" (metrics.ForServer), so that one /metrics serves the
	// whole dev process. The caller registers the Go runtime and process
	// collectors (metrics.NewRegistry). The default is nil: no metrics.
	Metrics prometheus.Registerer
	// LoadInterval is how often the master pulls the servers' load
	// reports. The default is the master's (10s).
	LoadInterval time.Duration
	// BalanceInterval and BalancerMaxMoves configure the master's
	// automatic balancer (master.Options); zero means its defaults.
	BalanceInterval  time.Duration
	BalancerMaxMoves int
	BalancerCooldown time.Duration
	// BackupScheduleInterval is how often the master looks for due
	// scheduled backups (master.Options); zero means its default (1m).
	BackupScheduleInterval time.Duration
}

// LocalStore is the Storage value that starts an object store (SeaweedFS)
// for the cluster instead of naming one.
const LocalStore = "s3"

// StoreURL returns the storage URL of the cluster's own object store
// (Storage LocalStore), or "".
func (c *Cluster) StoreURL() string {
	if c.store == nil {
		return ""
	}
	return "s3://tabula/dev?endpoint=" + c.store.Endpoint()
}

// devFileCache bounds each dev tablet server's local copies of SSTables
// read from an object store.
const devFileCache = 256 << 20

// Cluster is a running dev cluster.
type Cluster struct {
	sec     security
	store   *seaweed.Server // the cluster's own object store (LocalStore)
	etcd    *embedetcd.Server
	master  *master.Master
	servers []*tabletserver.Server
	gwConn  *client.Client
	gateway *gateway.Process

	closeOnce sync.Once
	closeErr  error
}

func (c *Config) fill() error {
	if c.Dir == "" {
		return fmt.Errorf("%w: Dir is required", ErrConfig)
	}
	if c.Servers == 0 {
		c.Servers = 3
	}
	if c.Servers < 0 {
		return fmt.Errorf("%w: Servers is %d; give at least 1", ErrConfig, c.Servers)
	}
	if c.MasterAddr == "" {
		c.MasterAddr = "127.0.0.1:0"
	}
	if c.Cluster == "" {
		c.Cluster = "default"
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return nil
}

// Start starts etcd, the master and the tablet servers, and returns once
// all of them serve. On error everything already started is stopped.
func Start(ctx context.Context, cfg Config) (_ *Cluster, err error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("devcluster: creating %s: %w", cfg.Dir, err)
	}
	c := &Cluster{}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()

	if c.sec, err = newSecurity(cfg); err != nil {
		return nil, err
	}
	clientAddr, peerAddr, err := etcdAddrs(cfg)
	if err != nil {
		return nil, err
	}
	c.etcd, err = embedetcd.Start(ctx, embedetcd.Config{
		Dir:        filepath.Join(cfg.Dir, "etcd"),
		ClientAddr: clientAddr,
		PeerAddr:   peerAddr,
		NoFsync:    cfg.NoFsync,
		TLS:        c.sec.pki.Etcd,
	})
	if err != nil {
		return nil, err
	}
	if err := c.sec.bootstrap(ctx, cfg, c.etcd.Endpoints()); err != nil {
		return nil, err
	}
	if err := os.WriteFile(addrsFile(cfg.Dir), []byte(clientAddr+" "+peerAddr+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("devcluster: %w", err)
	}

	if cfg.Storage == LocalStore {
		c.store, err = seaweed.Start(ctx, seaweed.Config{Dir: filepath.Join(cfg.Dir, "seaweed"), Bucket: "tabula"})
		if err != nil {
			return nil, fmt.Errorf("devcluster: starting SeaweedFS for --storage %s: %w", LocalStore, err)
		}
		cfg.Storage = "s3://tabula/dev?endpoint=" + c.store.Endpoint()
		cfg.Logger.Info("object store started", "url", cfg.Storage, "dir", filepath.Join(cfg.Dir, "seaweed"))
	}
	storage := filepath.Join(cfg.Dir, "data")
	var fsys vfs.FS
	if cfg.Storage != "" {
		if fsys, storage, err = backend.Open(ctx, cfg.Storage, ""); err != nil {
			return nil, fmt.Errorf("devcluster: %w", err)
		}
	}
	// The master's scheduled backups read the storage as the servers do.
	runner := schedrun.Runner{Source: fsys, SourceRoot: storage}
	if fsys == nil {
		if runner.Source, runner.SourceRoot, err = backend.Open(ctx, storage, ""); err != nil {
			return nil, fmt.Errorf("devcluster: %w", err)
		}
	}
	c.master, err = master.Start(ctx, master.Options{
		Etcd:                  c.etcd.Endpoints(),
		Cluster:               cfg.Cluster,
		ListenAddr:            cfg.MasterAddr,
		StorageRoot:           storage,
		FS:                    fsys,
		DefaultSplitThreshold: cfg.SplitThreshold,
		SessionTTL:            cfg.LeaseTTL,
		LoadInterval:          cfg.LoadInterval,
		BalanceInterval:       cfg.BalanceInterval,
		BalancerMaxMoves:      cfg.BalancerMaxMoves,
		BalancerCooldown:      cfg.BalancerCooldown,
		Logger:                cfg.Logger.With("component", "master"),
		EtcdTLS:               c.sec.master.etcd,
		ServerTLS:             c.sec.master.server,
		DialTLS:               c.sec.master.dial,
		Auth:                  cfg.Auth,
		Metrics:               metrics.ForServer(cfg.Metrics, "master"),

		BackupRunner:           runner,
		BackupScheduleInterval: cfg.BackupScheduleInterval,
	})
	if err != nil {
		return nil, fmt.Errorf("devcluster: starting the master on %s: %w", cfg.MasterAddr, err)
	}
	for i := 1; i <= cfg.Servers; i++ {
		id := fmt.Sprintf("ts-%d", i)
		sfs := fsys
		if cfg.Storage != "" {
			// Each server spools its own uploads, as on its own host.
			if sfs, _, err = backend.Open(ctx, cfg.Storage, filepath.Join(cfg.Dir, id)); err != nil {
				return nil, fmt.Errorf("devcluster: %w", err)
			}
			if sfs, err = backend.WithFileCache(sfs, filepath.Join(cfg.Dir, id, "cache"), devFileCache); err != nil {
				return nil, fmt.Errorf("devcluster: %w", err)
			}
		}
		s, err := tabletserver.Start(ctx, tabletserver.Options{
			ID:               id,
			ListenAddr:       "127.0.0.1:0",
			DataDir:          storage,
			FS:               sfs,
			Etcd:             c.etcd.Endpoints(),
			Cluster:          cfg.Cluster,
			LeaseTTL:         cfg.LeaseTTL,
			MemtableSize:     cfg.MemtableSize,
			CacheBytes:       cfg.CacheBytes,
			SpillDir:         filepath.Join(cfg.Dir, id, "spill"),
			SyncMode:         cfg.SyncMode,
			SplitThreshold:   cfg.SplitThreshold,
			LoadWindow:       cfg.LoadWindow,
			HotSplitRPS:      cfg.HotSplitRPS,
			HotSplitWindows:  cfg.HotSplitWindows,
			HotSplitCooldown: cfg.HotSplitCooldown,
			Logger:           cfg.Logger.With("component", "tabletserver", "id", id),
			EtcdTLS:          c.sec.server.etcd,
			ServerTLS:        c.sec.server.server,
			Auth:             cfg.Auth,
			Metrics:          metrics.ForServer(cfg.Metrics, id),
		})
		if err != nil {
			return nil, fmt.Errorf("devcluster: starting tablet server %s: %w", id, err)
		}
		c.servers = append(c.servers, s)
	}
	if cfg.GatewayAddr != "" {
		if err := c.startGateway(ctx, cfg); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// startGateway starts the Bigtable API gateway on a client of its own
// that reaches the cluster's tablet servers in process (client.Options
// Local; docs/GATEWAY.md): they all run in this process, so no call of
// the gateway crosses a second gRPC hop.
func (c *Cluster) startGateway(ctx context.Context, cfg Config) (err error) {
	local := make([]client.LocalServer, len(c.servers))
	for i, s := range c.servers {
		local[i] = s
	}
	// With TLS the gateway's client presents the gateway identity's
	// certificate, which lets it act for a caller that authenticated with
	// a certificate of its own (and gives it no rights of its own).
	c.gwConn, err = client.NewClientWithOptions(ctx, client.Options{Masters: []string{c.master.Addr()}, TLS: c.sec.gateway.dial, Local: local})
	if err != nil {
		return fmt.Errorf("devcluster: connecting the gateway: %w", err)
	}
	c.gateway, err = gateway.Start(cfg.GatewayAddr, c.gwConn, gateway.Options{
		Metrics: metrics.ForServer(cfg.Metrics, "gateway"),
		// With Auth the gateway's client has TLS and no credentials of
		// its own: every call runs with its caller's token or as its
		// caller's certificate.
		CallerAuth: cfg.Auth,
		TLS:        c.sec.gateway.server,
	})
	if err != nil {
		return fmt.Errorf("devcluster: starting the Bigtable gateway: %w", err)
	}
	cfg.Logger.Info("bigtable gateway started", "addr", c.gateway.Addr())
	return nil
}

// GatewayAddr returns the Bigtable gateway's address, or "" when the
// cluster has none.
func (c *Cluster) GatewayAddr() string {
	if c.gateway == nil {
		return ""
	}
	return c.gateway.Addr()
}

func addrsFile(dir string) string { return filepath.Join(dir, "etcd.addrs") }

// etcdAddrs returns the etcd client and peer addresses: the configured
// one, else the previous run's (etcd remembers its peer URL in its data),
// else free ports.
func etcdAddrs(cfg Config) (client, peer string, err error) {
	if b, rerr := os.ReadFile(addrsFile(cfg.Dir)); rerr == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			client, peer = f[0], f[1]
		}
	}
	if cfg.EtcdAddr != "" {
		client = cfg.EtcdAddr
	}
	if client == "" {
		if client, err = embedetcd.FreeAddr(); err != nil {
			return "", "", fmt.Errorf("devcluster: %w", err)
		}
	}
	if peer == "" {
		if peer, err = embedetcd.FreeAddr(); err != nil {
			return "", "", fmt.Errorf("devcluster: %w", err)
		}
	}
	return client, peer, nil
}

// Master returns the cluster's master (for its status page).
func (c *Cluster) Master() *master.Master { return c.master }

// Servers returns the tablet servers, ts-1 first (for their pages).
func (c *Cluster) Servers() []*tabletserver.Server { return c.servers }

// MasterAddr returns the master's address (host:port) for clients.
func (c *Cluster) MasterAddr() string { return c.master.Addr() }

// EtcdEndpoints returns the embedded etcd's client endpoints.
func (c *Cluster) EtcdEndpoints() []string { return c.etcd.Endpoints() }

// ServerAddrs returns the tablet servers' addresses, ts-1 first.
func (c *Cluster) ServerAddrs() []string {
	out := make([]string, len(c.servers))
	for i, s := range c.servers {
		out[i] = s.Addr()
	}
	return out
}

// Close stops the master, then the tablet servers (which flush their
// tablets and release their leases), then etcd. It is idempotent and
// returns the errors joined.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() {
		var errs []error
		if c.gateway != nil {
			errs = append(errs, c.gateway.Close())
		}
		if c.gwConn != nil {
			c.gwConn.Close()
		}
		// The master goes first: with it gone nobody reassigns the tablets
		// of servers that are shutting down, so the servers flush and stop
		// without the master trying to load their tablets elsewhere.
		if c.master != nil {
			errs = append(errs, c.master.Close())
		}
		var wg sync.WaitGroup
		serrs := make([]error, len(c.servers))
		for i, s := range c.servers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				serrs[i] = s.Close()
			}()
		}
		wg.Wait()
		errs = append(errs, serrs...)
		if c.etcd != nil {
			c.etcd.Close()
		}
		if c.store != nil {
			c.store.Close()
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}
