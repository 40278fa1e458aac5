// Package embedetcd runs a single-member etcd server inside the process: the
// dev cluster's coordination store and the one tests start. It wraps
// go.etcd.io/etcd/server/v3/embed with loopback-only listeners.
//
//	srv, err := embedetcd.Start(ctx, embedetcd.Config{Dir: "data/etcd"})
//	defer srv.Close()
//	cli, err := clientv3.New(clientv3.Config{Endpoints: srv.Endpoints()})
//
// With Config.TLS set, the client port speaks TLS and wants a client
// certificate from the same CA; a client then sets clientv3.Config.TLS:
//
//	srv, err := embedetcd.Start(ctx, embedetcd.Config{Dir: "data/etcd", TLS: pki.Etcd})
//	tlsCfg, err := tlsconf.ClientConfig(pki.Master)
//	cli, err := meta.NewClient(ctx, srv.Endpoints(), tlsCfg)
package embedetcd

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"time"

	"go.etcd.io/etcd/server/v3/embed"

	"github.com/tabuladb/tabula/tlsconf"
)

// Config says where the server keeps its data and listens.
type Config struct {
	// Dir holds etcd's data; it survives restarts. Required.
	Dir string
	// ClientAddr is host:port for clients. The default is a free port on 127.0.0.1.
	ClientAddr string
	// PeerAddr is host:port for the (unused) peer listener. The default is a free port on 127.0.0.1.
	PeerAddr string
	// NoFsync turns etcd's fsyncs off (tests only). The default is false.
	NoFsync bool
	// LogLevel is etcd's own log level (debug, info, warn, error, panic,
	// fatal). The default is fatal: etcd logs harmless errors while it shuts
	// down, and the dev cluster's operators watch Tabula's log, not etcd's.
	LogLevel string
	// StartTimeout bounds how long Start waits for the server to be ready.
	// The default is 60s.
	StartTimeout time.Duration
	// TLS, when its files are set, serves the client port over TLS and
	// requires a client certificate signed by TLS.CA (etcd's
	// ClientCertAuth); TLS.Cert must also be good for client
	// authentication, because etcd's gateway dials its own port with it.
	// The peer port speaks TLS too (one member has no peers, but the port
	// is open). etcd reads the certificate and key again on
	// every handshake, so overwriting them rotates them. The default is
	// plaintext.
	TLS tlsconf.Files
}

// Server is a running embedded etcd.
type Server struct {
	etcd     *embed.Etcd
	endpoint string
}

// FreeAddr returns a loopback host:port that was free a moment ago.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Start starts the server and waits until it serves.
func Start(ctx context.Context, c Config) (_ *Server, err error) {
	if c.Dir == "" {
		return nil, fmt.Errorf("embedetcd: Config.Dir is required")
	}
	for _, a := range []*string{&c.ClientAddr, &c.PeerAddr} {
		if *a == "" {
			if *a, err = FreeAddr(); err != nil {
				return nil, fmt.Errorf("embedetcd: finding a free port: %w", err)
			}
		}
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 60 * time.Second
	}
	clientScheme := "http"
	if c.TLS.Enabled() {
		if err := c.TLS.Check("server"); err != nil {
			return nil, fmt.Errorf("embedetcd: Config.TLS: %w", err)
		}
		clientScheme = "https"
	}
	cfg := embed.NewConfig()
	cfg.Name = "tabula"
	cfg.Dir = c.Dir
	cfg.LogLevel = c.LogLevel
	if cfg.LogLevel == "" {
		cfg.LogLevel = "fatal"
	}
	cfg.UnsafeNoFsync = c.NoFsync
	// Keep one hour of history: every reassignment writes a new revision
	// of a tablet record, and without compaction etcd keeps them all.
	cfg.AutoCompactionMode = "periodic"
	cfg.AutoCompactionRetention = "1h"
	cu := url.URL{Scheme: clientScheme, Host: c.ClientAddr}
	pu := url.URL{Scheme: clientScheme, Host: c.PeerAddr}
	if c.TLS.Enabled() {
		// Fields set one by one rather than a transport.TLSInfo literal:
		// naming the type would make go.etcd.io/etcd/client/pkg a direct
		// requirement in go.mod for no gain.
		cfg.ClientTLSInfo.CertFile = c.TLS.Cert
		cfg.ClientTLSInfo.KeyFile = c.TLS.Key
		cfg.ClientTLSInfo.TrustedCAFile = c.TLS.CA
		cfg.ClientTLSInfo.ClientCertAuth = true
		// The peer port too: a single member has no peers, but the port is
		// open, and an open plaintext port is what TLS is meant to remove.
		cfg.PeerTLSInfo.CertFile = c.TLS.Cert
		cfg.PeerTLSInfo.KeyFile = c.TLS.Key
		cfg.PeerTLSInfo.TrustedCAFile = c.TLS.CA
		cfg.PeerTLSInfo.ClientCertAuth = true
	}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("embedetcd: starting etcd in %s: %w", c.Dir, err)
	}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		return nil, fmt.Errorf("embedetcd: etcd failed while starting: %w", err)
	case <-time.After(c.StartTimeout):
		return nil, fmt.Errorf("embedetcd: etcd was not ready after %s", c.StartTimeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &Server{etcd: e, endpoint: c.ClientAddr}, nil
}

// Endpoints returns the client endpoints as host:port, with or without
// TLS: clientv3 uses TLS for an endpoint without a scheme exactly when its
// Config.TLS is set, and verifies the server's certificate against the
// host (an IP address here). An "http://" prefix would make clientv3 drop
// TLS even when configured, so none is added.
func (s *Server) Endpoints() []string { return []string{s.endpoint} }

// Err returns a channel that receives the error that stopped the server
// while it ran (a failed disk, say).
func (s *Server) Err() <-chan error { return s.etcd.Err() }

// Close stops the server and waits for it.
func (s *Server) Close() { s.etcd.Close() }

// Kill stops the server at once, as a crash would: the raft node stops
// first, so nothing (lease expiry included) happens while the listeners
// shut down. Data already committed stays in Dir.
func (s *Server) Kill() {
	s.etcd.Server.HardStop()
	s.etcd.Close()
}
