package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/gateway"
	"github.com/tabuladb/tabula/metrics"
	"github.com/tabuladb/tabula/tabletserver"
	"github.com/tabuladb/tabula/tlsconf"
)

// defaultGateway is where the Bigtable gateway listens: the Bigtable
// emulator's usual port, so BIGTABLE_EMULATOR_HOST=127.0.0.1:8086 works.
const defaultGateway = "127.0.0.1:8086"

// instancesUsage is the help of --instances (tabula gateway, and
// tabletserver with --bigtable-addr).
const instancesUsage = `what an instance that is neither --instance, "default" nor an existing namespace is: "any" maps it to the default namespace (emulator users' arbitrary ids keep working; a namespace created elsewhere is seen within 100 ms), "namespaces" answers NOT_FOUND as Cloud Bigtable does, after reading the namespaces again, so a namespace is never mapped wrong (docs/GATEWAY.md "Names and instances")`

func newGatewayCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "gateway [--listen HOST:PORT]",
		Short: "Serve the Cloud Bigtable API (data and table admin) for a Tabula cluster",
		Long: `Serve google.bigtable.v2 and the Bigtable table admin API on --listen for
the cluster whose masters --master names, so the official Bigtable clients,
cbt and the HBase adapter work against Tabula unchanged: point them at it
with BIGTABLE_EMULATOR_HOST=HOST:PORT. Every project maps to this one
cluster; an instance is a Tabula namespace (instance I, table T is the
table I:T), and an instance that is no namespace is the default namespace
(--instances=any) or NOT_FOUND (--instances=namespaces). The gateway
keeps no state: run as many as you like. It listens in plaintext, as the
emulator does, or TLS with --serve-tls; it talks to the cluster with the
--tls-* and --token settings. With --auth each call runs as its caller
instead: Bigtable clients send their own Tabula token (authorization:
Bearer TOKEN), or, with --serve-tls, a client certificate signed by the
cluster's CA, and the cluster checks that caller's roles (for a
certificate, --tls-cert must be the gateway identity's, common name
tabula-gateway, and --token unset). "tabula dev" starts one on ` + defaultGateway + `.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := settings(cmd)
			if err != nil {
				return err
			}
			sampleBytes, err := parseSize(v.GetString("sample-size"))
			if err != nil {
				return fmt.Errorf("--sample-size: %w", err)
			}
			addrs := stringList(v, "master")
			if len(addrs) == 0 {
				return fmt.Errorf("no master address; pass --master host:port or set TABULA_MASTER: %w", errUnreachable)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			tlsCfg, token, err := clientSecurity(v)
			if err != nil {
				return err
			}
			cli, err := client.NewClientWithOptions(ctx, client.Options{Masters: addrs, TLS: tlsCfg, Token: token})
			if err != nil {
				return wrapf(err, "connecting to master %s", strings.Join(addrs, ","))
			}
			defer cli.Close()
			instances, err := gateway.ParseInstanceMode(v.GetString("instances"))
			if err != nil {
				return fmt.Errorf("--instances: %w", err)
			}
			serveTLS, err := gatewayServeTLS(v)
			if err != nil {
				return err
			}
			reg, routes := opsMetrics(v)
			p, err := gateway.Start(v.GetString("listen"), cli, gateway.Options{
				TLS:         serveTLS,
				InstanceID:  v.GetString("instance"),
				Instances:   instances,
				ClusterID:   v.GetString("cluster-id"),
				CallerAuth:  v.GetBool("auth"),
				Metrics:     reg,
				SampleBytes: sampleBytes,
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "tabula gateway: Cloud Bigtable API on %s for master %s\n", p.Addr(), strings.Join(addrs, ","))
			fmt.Fprintf(cmd.OutOrStdout(), "use it with: export BIGTABLE_EMULATOR_HOST=%s\n", p.Addr())
			ops, err := serveOps(v, p.Health(), cmd.OutOrStdout(), routes...)
			if err != nil {
				p.Close()
				return err
			}
			<-ctx.Done()
			closeOps(ops)
			return p.Close()
		},
	}
	f := c.Flags()
	f.String("listen", defaultGateway, "address to serve the Bigtable API on (port 0 picks one)")
	f.String("instance", "tabula", "instance id of the default namespace, listed first by ListInstances (an instance that is a namespace is that namespace; any other, see --instances)")
	f.String("instances", "any", instancesUsage)
	f.String("cluster-id", "tabula", "cluster id the instance admin API reports")
	f.String("sample-size", "256MiB", "SampleRowKeys answers a key about every this much of each tablet's data (Bigtable connectors split their work there): a byte count, or with a suffix KiB, MiB, GiB; 0: the tablet servers' default, 256MiB")
	f.Bool("serve-tls", false, "serve the Bigtable API over TLS with --tls-cert and --tls-key as the server certificate, taking client certificates signed by --tls-ca (with --auth a certificate's common name is the caller)")
	f.Bool("auth", false, "run every call as its caller: each Bigtable client must send a Tabula token (authorization: Bearer TOKEN), presented to the cluster instead of --token, or with --serve-tls a client certificate, whose common name the gateway acts for (UNAUTHENTICATED with neither), so the caller's own roles apply (docs/GATEWAY.md \"Security\")")
	addHTTPFlag(c, "")
	return c
}

// gatewayServeTLS returns the TLS configuration of the gateway's own port
// with --serve-tls (nil without): the --tls-* files as a server's.
func gatewayServeTLS(v *viper.Viper) (*tls.Config, error) {
	if !v.GetBool("serve-tls") {
		return nil, nil
	}
	files := tlsFiles(v)
	if err := files.Check("server"); err != nil {
		return nil, fmt.Errorf("--serve-tls: %w (flags --tls-ca, --tls-cert, --tls-key)", err)
	}
	return tlsconf.ServerConfig(files)
}

// startServerGateway serves the Bigtable API on addr from the tablet
// server s's own process (`tabula tabletserver --bigtable-addr`): the
// gateway's client reaches s in process (client.Options.Local), without a
// second gRPC hop, and the other servers over gRPC (docs/GATEWAY.md). Its
// client finds tablets through the --master masters and presents the
// --tls-* and --token settings, as `tabula gateway` does; with --auth
// (the server checks its callers) every Bigtable call runs as its own
// caller, whose token it must carry (gateway.Options.CallerAuth), on s as
// on every other server. reg, when set, gets the gateway's series
// with server="gateway". The returned stop closes the gateway and its
// client.
func startServerGateway(ctx context.Context, v *viper.Viper, s *tabletserver.Server, addr string, reg prometheus.Registerer, out io.Writer) (stop func() error, err error) {
	addrs := stringList(v, "master")
	if len(addrs) == 0 {
		return nil, fmt.Errorf("--bigtable-addr needs the masters' addresses; pass --master host:port or set TABULA_MASTER: %w", errUnreachable)
	}
	tlsCfg, token, err := clientSecurity(v)
	if err != nil {
		return nil, err
	}
	instances, err := gateway.ParseInstanceMode(v.GetString("instances"))
	if err != nil {
		return nil, fmt.Errorf("--instances: %w", err)
	}
	cli, err := client.NewClientWithOptions(ctx, client.Options{Masters: addrs, TLS: tlsCfg, Token: token, Local: []client.LocalServer{s}})
	if err != nil {
		return nil, wrapf(err, "connecting the Bigtable gateway to master %s", strings.Join(addrs, ","))
	}
	p, err := gateway.Start(addr, cli, gateway.Options{
		InstanceID: v.GetString("instance"),
		Instances:  instances,
		ClusterID:  v.GetString("cluster-id"),
		// A server that checks its callers serves Bigtable calls as
		// theirs too: never with the gateway client's rights.
		CallerAuth: v.GetBool("auth"),
		Metrics:    metrics.ForServer(reg, "gateway"),
	})
	if err != nil {
		cli.Close()
		return nil, err
	}
	fmt.Fprintf(out, "Cloud Bigtable API on %s (this tablet server's tablets in process): export BIGTABLE_EMULATOR_HOST=%s\n", p.Addr(), p.Addr())
	return func() error {
		err := p.Close()
		cli.Close()
		return err
	}, nil
}
