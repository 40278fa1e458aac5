package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/tabuladb/tabula/internal/embedetcd"
)

func newEtcdCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "etcd --data-dir DIR [--listen-client HOST:PORT] [--listen-peer HOST:PORT]",
		Short: "Run a standalone single-member etcd for masters and tablet servers on this machine",
		Long: `Run a single-member etcd server (the same embedded etcd "tabula dev" uses) for
a cluster of separate processes on one machine: start it first, then point
every "tabula master" and "tabula tabletserver" at it with --etcd.

  tabula etcd --data-dir /srv/tabula/etcd &
  tabula master --etcd 127.0.0.1:2379 ...

All of etcd's state (schemas, the tablet map, server leases) lives in
--data-dir: stop it with Ctrl-C or SIGTERM, or kill it, and start it again
on the same directory and it carries on with the same data and leases
(a lease's time to live restarts when etcd does). Keep --listen-peer the
same across restarts of one data directory. It runs until SIGINT or
SIGTERM. For several machines or a fault-tolerant etcd, run a real etcd
cluster instead.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := settings(cmd)
			if err != nil {
				return err
			}
			dir := v.GetString("data-dir")
			if dir == "" {
				return &usageError{cmd: "etcd", err: fmt.Errorf("--data-dir is required")}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			srv, err := embedetcd.Start(ctx, embedetcd.Config{
				Dir:        dir,
				ClientAddr: v.GetString("listen-client"),
				PeerAddr:   v.GetString("listen-peer"),
				NoFsync:    v.GetBool("unsafe-no-fsync"),
				LogLevel:   v.GetString("log-level"),
				// --tls-*: serve clients over TLS and require a certificate
				// signed by --tls-ca.
				TLS: tlsFiles(v),
			})
			if err != nil {
				return wrapf(err, "starting etcd")
			}
			defer srv.Close()
			fmt.Fprintf(cmd.OutOrStdout(), "tabula etcd serving clients on %s, data in %s\n", srv.Endpoints()[0], dir)
			select {
			case <-ctx.Done():
				return nil
			case err := <-srv.Err():
				return wrapf(err, "etcd stopped")
			}
		},
	}
	f := c.Flags()
	f.String("data-dir", "", "directory for etcd's data (required); kept across restarts")
	f.String("listen-client", "127.0.0.1:2379", "client address host:port (what --etcd of the other processes names)")
	f.String("listen-peer", "127.0.0.1:2380", "peer address host:port (single member: nothing connects to it, but keep it stable for a data directory)")
	f.Bool("unsafe-no-fsync", false, "do not fsync etcd's files: survives a killed process, not a machine crash (tests only)")
	f.String("log-level", "error", "etcd's own log level: debug, info, warn, error, panic or fatal")
	return c
}
