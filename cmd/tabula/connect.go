package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/tabuladb/tabula/client"
)

// session is what a client command works with: its settings, a context
// and a connected client. close releases all of it.
type session struct {
	v   *viper.Viper
	ctx context.Context
	cli *client.Client
	out *printer
	end func()
}

func (s *session) close() {
	if s.cli != nil {
		s.cli.Close()
	}
	s.end()
}

// connect reads the command's settings and connects to the master(s).
// It fails fast with errUnreachable when no master address answers TCP,
// rather than letting the client retry until the deadline.
func connect(cmd *cobra.Command) (_ *session, err error) {
	v, err := settings(cmd)
	if err != nil {
		return nil, err
	}
	out, err := newPrinter(cmd.OutOrStdout(), v.GetString("output"))
	if err != nil {
		return nil, err
	}
	addrs := stringList(v, "master")
	if len(addrs) == 0 {
		return nil, fmt.Errorf("no master address; pass --master host:port or set TABULA_MASTER: %w", errUnreachable)
	}
	ctx, end := commandContext(cmd, v)
	defer func() {
		if err != nil {
			end()
		}
	}()
	if err := probe(ctx, addrs); err != nil {
		return nil, err
	}
	tlsCfg, token, err := clientSecurity(v)
	if err != nil {
		return nil, err
	}
	cli, err := client.NewClientWithOptions(ctx, client.Options{Masters: addrs, TLS: tlsCfg, Token: token})
	if err != nil {
		return nil, wrapf(err, "connecting to master %s", strings.Join(addrs, ","))
	}
	return &session{v: v, ctx: ctx, cli: cli, out: out, end: end}, nil
}

// probe checks that at least one address accepts TCP connections.
func probe(ctx context.Context, addrs []string) error {
	var last error
	d := net.Dialer{Timeout: 3 * time.Second}
	for _, a := range addrs {
		conn, err := d.DialContext(ctx, "tcp", a)
		if err == nil {
			conn.Close()
			return nil
		}
		last = err
	}
	return fmt.Errorf("%w at %s: %v", errUnreachable, strings.Join(addrs, ","), last)
}
