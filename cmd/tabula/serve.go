package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/tabuladb/tabula/backup/schedrun"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/devcluster"
	"github.com/tabuladb/tabula/master"
	"github.com/tabuladb/tabula/metrics"
	"github.com/tabuladb/tabula/opshttp"
	"github.com/tabuladb/tabula/tabletserver"
)

// Server commands read these keys from flags, TABULA_* env and --config.

func addLogFlag(c *cobra.Command, def string) {
	c.Flags().String("log-level", def, "log level: debug, info, warn or error")
}

func newLogger(v *viper.Viper) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(v.GetString("log-level"))); err != nil {
		return nil, cell.Invalidf("--log-level %q is not debug, info, warn or error", v.GetString("log-level"))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})), nil
}

// sizeSetting reads a byte-size setting ("64MiB"); empty means 0 (the
// component's default).
func sizeSetting(v *viper.Viper, key string) (int64, error) {
	s := strings.TrimSpace(v.GetString(key))
	if s == "" {
		return 0, nil
	}
	n, err := parseSize(s)
	if err != nil {
		return 0, fmt.Errorf("--%s: %w", key, err)
	}
	return n, nil
}

func sizeSettings(v *viper.Viper, keys ...string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, k := range keys {
		n, err := sizeSetting(v, k)
		if err != nil {
			return nil, err
		}
		out[k] = n
	}
	return out, nil
}

// waitForSignal blocks until SIGINT or SIGTERM (or the parent context).
func waitForSignal(ctx context.Context) {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
}

func newDevCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "dev [--servers N] [--data DIR]",
		Short: "Run a whole cluster in this process: embedded etcd, a master and N tablet servers",
		Long: `Run a dev cluster on loopback: an embedded etcd, one master and N tablet
servers, with all state under --data (kept across restarts). It prints the
master address, writes it to DIR/master.addr, and runs until Ctrl-C or SIGTERM.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := settings(cmd)
			if err != nil {
				return err
			}
			log, err := newLogger(v)
			if err != nil {
				return err
			}
			sizes, err := sizeSettings(v, "memtable-size", "cache-size", "split-threshold")
			if err != nil {
				return err
			}
			ld, err := readLoadSettings(v)
			if err != nil {
				return err
			}
			addr := v.GetString("master-addr")
			if addr == "" {
				if ms := stringList(v, "master"); len(ms) > 0 {
					addr = ms[0]
				}
			}
			dir := v.GetString("data")
			gw := v.GetString("gateway")
			if v.GetBool("auth") && !cmd.Flags().Changed("gateway") && !v.GetBool("gateway-tls") {
				// Opt in: the port is plaintext, and with auth the
				// Bigtable clients' tokens would cross it in the clear.
				gw = ""
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			reg, routes := opsMetrics(v)
			cl, err := devcluster.Start(ctx, devcluster.Config{
				Dir:              dir,
				Servers:          v.GetInt("servers"),
				MasterAddr:       addr,
				EtcdAddr:         v.GetString("etcd-addr"),
				Cluster:          v.GetString("cluster"),
				LeaseTTL:         v.GetDuration("lease-ttl"),
				MemtableSize:     sizes["memtable-size"],
				CacheBytes:       sizes["cache-size"],
				SplitThreshold:   sizes["split-threshold"],
				SyncMode:         v.GetString("sync"),
				LoadWindow:       ld.window,
				HotSplitRPS:      ld.rps,
				HotSplitWindows:  ld.windows,
				HotSplitCooldown: ld.cooldown,
				Logger:           log,
				TLS:              v.GetBool("tls"),
				Auth:             v.GetBool("auth"),
				Storage:          v.GetString("storage"),
				GatewayAddr:      gw,
				GatewayTLS:       v.GetBool("gateway-tls"),
				Metrics:          reg,
				LoadInterval:     v.GetDuration("load-interval"),
				BalanceInterval:  balanceInterval(v),
				BalancerMaxMoves: v.GetInt("balancer-max-moves"),
				BalancerCooldown: v.GetDuration("balancer-cooldown"),
			})
			if err != nil {
				return wrapf(err, "starting the dev cluster in %s", dir)
			}
			maddr := cl.MasterAddr()
			if err := os.WriteFile(filepath.Join(dir, "master.addr"), []byte(maddr+"\n"), 0o644); err != nil {
				cl.Close()
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "tabula dev cluster: master %s, %d tablet servers, etcd %s, data in %s\n",
				maddr, v.GetInt("servers"), strings.Join(cl.EtcdEndpoints(), ","), dir)
			if u := cl.StoreURL(); u != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "tablets on SeaweedFS at %s (its data in %s)\n", u, filepath.Join(dir, "seaweed"))
			}
			if a := cl.GatewayAddr(); a != "" {
				if err := os.WriteFile(filepath.Join(dir, "gateway.addr"), []byte(a+"\n"), 0o644); err != nil {
					cl.Close()
					return err
				}
				if v.GetBool("gateway-tls") {
					fmt.Fprintf(cmd.OutOrStdout(), "Cloud Bigtable API on %s over TLS (its certificate: %s; clients trust %s and may present a client certificate it signed: docs/GATEWAY.md \"Security\")\n", a, cl.PKI().Gateway.Cert, cl.PKI().CA)
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "Cloud Bigtable API on %s: export BIGTABLE_EMULATOR_HOST=%s\n", a, a)
				}
			}
			// One set of health endpoints and one /metrics for the whole
			// dev process: ready when the master leads and every server is
			// ready; every component's series carry server="master",
			// "ts-N" or "gateway".
			if a := v.GetString("http"); a != "" {
				ops, err := opshttp.Serve(a, opshttp.NewHealth(cl.Ready), append(routes, devStatusRoutes(cl)...)...)
				if err != nil {
					cl.Close()
					return err
				}
				defer ops.Close()
				if err := writeAddrFile(dir, "http.addr", ops.Addr()); err != nil {
					cl.Close()
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "health checks on http://%s/healthz and /readyz\n", ops.Addr())
				printStatusURL(cmd.OutOrStdout(), ops)
				if routes != nil {
					fmt.Fprintf(cmd.OutOrStdout(), "Prometheus metrics on http://%s/metrics\n", ops.Addr())
				}
			}
			printDevSecurity(cmd.OutOrStdout(), cl)
			if maddr != defaultMaster {
				fmt.Fprintf(cmd.OutOrStdout(), "use it with: export TABULA_MASTER=%s\n", maddr)
			}
			fmt.Fprintln(cmd.OutOrStdout(), "press Ctrl-C to stop")
			<-ctx.Done()
			fmt.Fprintln(cmd.OutOrStdout(), "stopping: flushing tablets...")
			if err := cl.Close(); err != nil {
				return wrapf(err, "stopping the dev cluster")
			}
			fmt.Fprintln(cmd.OutOrStdout(), "stopped")
			return nil
		},
	}
	f := c.Flags()
	f.Int("servers", 3, "number of tablet servers")
	f.String("data", "./tabula-data", "directory for all state (etcd and tablets); kept across restarts")
	f.String("master-addr", "", "master listen address (default: the --master address, 127.0.0.1:7100); :0 picks a free port")
	f.String("etcd-addr", "", "embedded etcd client address (default: the previous run's, else a free port)")
	f.String("cluster", "default", "cluster name: etcd keys live under /tabula/<cluster>/")
	f.Duration("lease-ttl", 10*time.Second, "tablet server lease TTL and master election session TTL")
	f.String("memtable-size", "", "memtable flush size per tablet, e.g. 64MiB (default: the server's)")
	f.String("cache-size", "", "block cache per server, e.g. 256MiB (default: the server's)")
	f.String("split-threshold", "", "tablet size that triggers a split, e.g. 256MiB (default 256MiB)")
	f.String("sync", "", "commit log sync mode: always, interval, none or buffered (default always)")
	f.String("storage", "", "keep tablets on an object store, s3://BUCKET[/PREFIX]?endpoint=http://HOST:PORT (credentials from AWS_*), instead of DIR/data; \"s3\" starts a SeaweedFS for the cluster in DIR/seaweed (make tools builds it)")
	f.Bool("tls", false, "TLS on every port (etcd, master, tablet servers) with a local CA made in DIR/tls")
	f.Bool("auth", false, "require authentication and check roles (implies --tls); the admin token goes to DIR/admin.token")
	f.String("gateway", defaultGateway, "serve the Cloud Bigtable API (tabula gateway) on this address; \"\" for none (off with --auth unless given or --gateway-tls; with --auth every call needs its caller's token or client certificate)")
	f.Bool("gateway-tls", false, "the gateway serves TLS with DIR/tls/tabula-gateway.pem and takes client certificates signed by the dev CA (implies --tls): with --auth a certificate's common name is the caller (docs/GATEWAY.md \"Security\")")
	addLoadFlags(c)
	addBalancerFlags(c)
	addHTTPFlag(c, defaultDevHTTP)
	addLoadIntervalFlag(c)
	addLogFlag(c, "info")
	return c
}

func addEtcdFlags(c *cobra.Command) {
	addServerSecurityFlags(c)
	c.Flags().String("etcd", "127.0.0.1:2379", "etcd endpoints host:port, comma-separated")
	c.Flags().String("cluster", "default", "cluster name: etcd keys live under /tabula/<cluster>/")
	c.Flags().String("advertise", "", "address others use to reach this process (default: the listen address)")
}

func newMasterCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "master --etcd HOST:PORT,...",
		Short: "Run a master (leader or standby) against an external etcd",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := settings(cmd)
			if err != nil {
				return err
			}
			log, err := newLogger(v)
			if err != nil {
				return err
			}
			thr, err := sizeSetting(v, "split-threshold")
			if err != nil {
				return err
			}
			sec, err := readServerSecurity(v)
			if err != nil {
				return err
			}
			fsys, root, err := masterStorage(cmd.Context(), v)
			if err != nil {
				return err
			}
			reg, routes := opsMetrics(v)
			// The leader runs the tables' scheduled backups, reading the
			// storage as the servers do; without storage it runs none.
			var runner master.BackupRunner
			if fsys != nil {
				runner = schedrun.Runner{Source: fsys, SourceRoot: root}
			}
			m, err := master.Start(cmd.Context(), master.Options{
				BackupRunner:          runner,
				Etcd:                  stringList(v, "etcd"),
				Cluster:               v.GetString("cluster"),
				ListenAddr:            v.GetString("listen"),
				AdvertiseAddr:         v.GetString("advertise"),
				ID:                    v.GetString("id"),
				StorageRoot:           root,
				FS:                    fsys,
				DefaultSplitThreshold: thr,
				SessionTTL:            v.GetDuration("session-ttl"),
				LoadTimeout:           v.GetDuration("load-timeout"),
				LoadInterval:          v.GetDuration("load-interval"),
				Merge:                 mergeOptions(v),
				BalanceInterval:       balanceInterval(v),
				BalancerMaxMoves:      v.GetInt("balancer-max-moves"),
				BalancerCooldown:      v.GetDuration("balancer-cooldown"),
				Logger:                log,
				EtcdTLS:               sec.etcd,
				ServerTLS:             sec.server,
				DialTLS:               sec.dial,
				Auth:                  sec.auth,
				Metrics:               reg,
			})
			if err != nil {
				return wrapf(err, "starting the master")
			}
			log.Info("master serving", "addr", m.Addr())
			fmt.Fprintf(cmd.OutOrStdout(), "tabula master serving on %s\n", m.Addr())
			ops, err := serveOps(v, m.Health(), cmd.OutOrStdout(), append(routes, masterStatusRoutes(v, m)...)...)
			if err != nil {
				m.Close()
				return err
			}
			printStatusURL(cmd.OutOrStdout(), ops)
			waitForSignal(cmd.Context())
			closeOps(ops)
			return wrapf(m.Close(), "stopping the master")
		},
	}
	addEtcdFlags(c)
	f := c.Flags()
	f.String("listen", defaultMaster, "gRPC listen address")
	f.String("id", "", "master ID in the election (default: the advertised address)")
	f.String("storage-root", "", "tablet storage root on a local or shared disk; if set, deleting a table removes its files and the GC sweeps it")
	f.String("storage", "", "tablet storage on an object store, s3://BUCKET[/PREFIX]?endpoint=http://HOST:PORT (credentials from AWS_*); instead of --storage-root")
	f.String("split-threshold", "", "default tablet split threshold, e.g. 256MiB (default 256MiB)")
	f.Duration("session-ttl", 10*time.Second, "election session TTL: how soon a standby takes over a dead leader")
	f.Duration("load-timeout", 2*time.Minute, "how long a tablet server may take to load a tablet (replaying its log) before the master tries again")
	addMergeFlags(c)
	addBalancerFlags(c)
	addHTTPFlag(c, "")
	addLoadIntervalFlag(c)
	addServerStatusURLFlag(c)
	addLogFlag(c, "info")
	return c
}

func newTabletServerCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "tabletserver --etcd HOST:PORT,... --id ID --data DIR",
		Short: "Run a tablet server against an external etcd",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := settings(cmd)
			if err != nil {
				return err
			}
			log, err := newLogger(v)
			if err != nil {
				return err
			}
			sizes, err := sizeSettings(v, "memtable-size", "memtable-soft-limit", "memtable-hard-limit", "cache-size", "split-threshold", "max-log-size")
			if err != nil {
				return err
			}
			sec, err := readServerSecurity(v)
			if err != nil {
				return err
			}
			fsys, root, err := serverStorage(cmd.Context(), v)
			if err != nil {
				return err
			}
			ld, err := readLoadSettings(v)
			if err != nil {
				return err
			}
			reg, routes := opsMetrics(v)
			opts := tabletserver.Options{
				ID:                v.GetString("id"),
				ListenAddr:        v.GetString("listen"),
				AdvertiseAddr:     v.GetString("advertise"),
				DataDir:           root,
				FS:                fsys,
				Etcd:              stringList(v, "etcd"),
				Cluster:           v.GetString("cluster"),
				LeaseTTL:          v.GetDuration("lease-ttl"),
				MemtableSize:      sizes["memtable-size"],
				MemtableSoftLimit: sizes["memtable-soft-limit"],
				MemtableHardLimit: sizes["memtable-hard-limit"],
				MaxLogBytes:       sizes["max-log-size"],
				SpillDir:          filepath.Join(v.GetString("data"), "spill"),
				CacheBytes:        sizes["cache-size"],
				SyncMode:          v.GetString("sync"),
				SplitThreshold:    sizes["split-threshold"],
				MaxScans:          v.GetInt("max-scans"),
				ScanStallTimeout:  v.GetDuration("scan-stall-timeout"),
				IngestIdleTimeout: v.GetDuration("ingest-idle-timeout"),
				LoadWindow:        ld.window,
				HotSplitRPS:       ld.rps,
				HotSplitWindows:   ld.windows,
				HotSplitCooldown:  ld.cooldown,
				Logger:            log,
				EtcdTLS:           sec.etcd,
				ServerTLS:         sec.server,
				Auth:              sec.auth,
				Metrics:           reg,
				MetricsTopTablets: v.GetInt("metrics-top-tablets"),
				LoadParallelism:   v.GetInt("load-parallelism"),
				ManifestFormat:    v.GetInt("manifest-format"),
			}
			bt := v.GetString("bigtable-addr")
			if bt != "" {
				// Two gRPC servers' series in one registry: each with its
				// server label, as in the dev process.
				opts.Metrics = metrics.ForServer(reg, "tabletserver")
			}
			setGoMemoryLimit(opts, log)
			s, err := tabletserver.Start(cmd.Context(), opts)
			if err != nil {
				return wrapf(err, "starting the tablet server")
			}
			log.Info("tablet server serving", "id", s.ID(), "addr", s.Addr())
			fmt.Fprintf(cmd.OutOrStdout(), "tabula tablet server %s serving on %s\n", s.ID(), s.Addr())
			stopGateway := func() error { return nil }
			if bt != "" {
				if stopGateway, err = startServerGateway(cmd.Context(), v, s, bt, reg, cmd.OutOrStdout()); err != nil {
					s.Close()
					return err
				}
			}
			ops, err := serveOps(v, s.Health(), cmd.OutOrStdout(), append(routes, serverStatusRoutes(s)...)...)
			if err != nil {
				stopGateway()
				s.Close()
				return err
			}
			printStatusURL(cmd.OutOrStdout(), ops)
			waitForSignal(cmd.Context())
			closeOps(ops)
			gwErr := stopGateway()
			return errors.Join(wrapf(gwErr, "stopping the Bigtable gateway"), wrapf(s.Close(), "stopping the tablet server"))
		},
	}
	addEtcdFlags(c)
	f := c.Flags()
	f.String("listen", "127.0.0.1:7200", "gRPC listen address")
	f.String("id", "", "stable server ID (default: the tablet server's default)")
	f.String("data", "./tabula-data/data", "storage root: tablets live in DIR/tables/<table>/<tablet>/, commit logs in DIR/logs/; with --storage, this server's own local folder (upload spool, SSTable cache); recovery spills another server's log records past its memory budget to DIR/spill")
	f.String("storage", "", "tablet storage on an object store, s3://BUCKET[/PREFIX]?endpoint=http://HOST:PORT (credentials from AWS_*); the same for every server and the master")
	f.String("file-cache-size", "1GiB", "with --storage: local copies of SSTables in DATA/cache, at most this much (0: none)")
	f.Duration("lease-ttl", 10*time.Second, "etcd lease TTL; the server fences itself before it can expire")
	f.String("memtable-size", "", "memtable flush size per tablet, e.g. 64MiB (default: the server's)")
	f.String("memtable-soft-limit", "", "server-wide memtable memory past which writers are throttled (default: the server's)")
	f.String("memtable-hard-limit", "", "server-wide memtable memory past which writes fail with RESOURCE_EXHAUSTED (default: the server's)")
	f.String("cache-size", "", "block cache size, e.g. 256MiB (default: the server's)")
	f.String("split-threshold", "", "tablet split threshold when the schema sets none, e.g. 256MiB (default 256MiB)")
	f.String("sync", "", "commit log sync mode: always, interval, none or buffered (default always)")
	f.String("max-log-size", "", "size of the server's shared commit log past which the tablets holding its oldest segment are flushed, e.g. 1GiB (default 1GiB)")
	f.Duration("scan-stall-timeout", time.Minute, "end a scan whose client has read nothing for this long (UNAVAILABLE; clients resume it), freeing its slot")
	f.Duration("ingest-idle-timeout", time.Minute, "end a bulk load call whose client has sent nothing for this long (UNAVAILABLE; nothing of it is loaded), so that the tablet's compactions, which wait while a load streams, run again")
	f.Int("max-scans", 0, "scans (ReadRows streams) run at once; more get RESOURCE_EXHAUSTED and are retried by clients (default 256)")
	addLoadFlags(c)
	f.String("bigtable-addr", "", "also serve the Cloud Bigtable API (as tabula gateway does) on this address, reaching this server's tablets in process and the others' over gRPC; needs --master (the gateway's client uses --tls-* and --token; with --auth every Bigtable call runs as its caller, whose token it must carry)")
	f.String("instance", "tabula", "with --bigtable-addr: instance id of the default namespace, listed first by ListInstances")
	f.String("instances", "any", "with --bigtable-addr: "+instancesUsage)
	f.String("cluster-id", "tabula", "with --bigtable-addr: cluster id the instance admin API reports")
	f.Int("load-parallelism", tabletserver.DefaultLoadParallelism, "tablets of the master's batched loads (LoadTablets) opened at once, e.g. when a dead server's tablets are handed on")
	f.Int("manifest-format", 2, "manifest format version to write: 2 records each SSTable's keys, so a tablet loads without opening its files; 1 is what releases before it read: use it while such servers may still load this cluster's tablets (a rolling upgrade, see docs/OPERATIONS.md)")
	f.Int("metrics-top-tablets", tabletserver.DefaultTopTablets, "per-tablet metrics (tabula_tablet_*) for this many of the server's largest tablets and as many of its busiest only; -1: none")
	addHTTPFlag(c, "")
	addLogFlag(c, "info")
	return c
}
