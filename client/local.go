package client

import (
	"crypto/tls"

	"google.golang.org/grpc"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// LocalServer is a tablet server running in the client's own process
// (a *tabletserver.Server): the client calls it without gRPC
// (Options.Local). The client package does not import the server; the
// server hands itself over through this interface.
type LocalServer interface {
	// Addr is the address the server registered, which tablet locations
	// name.
	Addr() string
	// LocalConn returns a connection that runs the server's handlers in
	// this process, for a client that would present clientTLS (nil:
	// plaintext) and token over gRPC: the server authenticates and
	// authorizes its calls as it would those.
	LocalConn(clientTLS *tls.Config, token string) (grpc.ClientConnInterface, error)
}

// localServers are the in-process connections of Options.Local, by
// address; read-only once made.
type localServers map[string]localServer

type localServer struct {
	ts  tabulapb.TabletServerClient
	err error // the connection's refusal (a handshake gRPC would fail too)
}

// newLocalServers connects to the servers of Options.Local with the
// client's credentials. A refused connection is kept as an error that
// every call to that server returns, as a failed handshake fails every
// call of a gRPC connection.
func newLocalServers(opts Options) localServers {
	if len(opts.Local) == 0 {
		return nil
	}
	m := make(localServers, len(opts.Local))
	for _, s := range opts.Local {
		conn, err := s.LocalConn(opts.TLS, opts.Token)
		if err != nil {
			m[s.Addr()] = localServer{err: err}
			continue
		}
		m[s.Addr()] = localServer{ts: tabulapb.NewTabletServerClient(callTokenConn{ClientConnInterface: conn, tls: opts.TLS != nil})}
	}
	return m
}

// server returns the in-process client of the server at addr, if it is
// one of Options.Local.
func (m localServers) server(addr string) (tabulapb.TabletServerClient, bool, error) {
	s, ok := m[addr]
	return s.ts, ok, s.err
}
