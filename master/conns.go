package master

import (
	"crypto/tls"
	"fmt"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/auth"
	"github.com/tabuladb/tabula/tlsconf"
)

// connPool keeps one gRPC connection per tablet server address.
type connPool struct {
	creds credentials.TransportCredentials
	// mu protects the fields below.
	mu     sync.Mutex
	conns  map[string]*grpc.ClientConn
	closed bool
}

// newConnPool dials over TLS with tlsCfg (whose certificate proves the
// master's identity to the tablet servers), or in plaintext if it is nil.
// Over TLS a server must also prove it is a tablet server: its verified
// certificate must name auth.TabletServerName, so that a certificate the
// CA issued to someone else, for a matching address, cannot receive the
// master's loads and schemas.
func newConnPool(tlsCfg *tls.Config) *connPool {
	creds := insecure.NewCredentials()
	if tlsCfg != nil {
		cfg := tlsCfg.Clone()
		cfg.VerifyConnection = requirePeerName(auth.TabletServerName, tlsCfg.VerifyConnection)
		creds = credentials.NewTLS(cfg)
	}
	return &connPool{creds: creds, conns: map[string]*grpc.ClientConn{}}
}

// requirePeerName refuses a connection whose verified certificate has
// another common name, then runs next (if any).
func requirePeerName(name string, next func(tls.ConnectionState) error) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if got, ok := tlsconf.PeerName(cs); !ok || got != name {
			return fmt.Errorf("master: the server's certificate names %q, not %q: it is not a tablet server of this cluster", got, name)
		}
		if next != nil {
			return next(cs)
		}
		return nil
	}
}

// client returns a client for the tablet server at addr.
func (p *connPool) client(addr string) (tabulapb.TabletServerClient, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	cc, ok := p.conns[addr]
	if !ok {
		var err error
		// grpc.NewClient does no I/O; it connects on first use.
		cc, err = grpc.NewClient(addr, grpc.WithTransportCredentials(p.creds))
		if err != nil {
			return nil, err
		}
		p.conns[addr] = cc
	}
	return tabulapb.NewTabletServerClient(cc), nil
}

// snapshots returns the TabletSnapshots client (snapshot.proto) of the
// tablet server at addr, over the same connection as client's.
func (p *connPool) snapshots(addr string) (tabulapb.TabletSnapshotsClient, error) {
	if _, err := p.client(addr); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	cc, ok := p.conns[addr]
	if !ok {
		return nil, ErrClosed
	}
	return tabulapb.NewTabletSnapshotsClient(cc), nil
}

// retain closes the connections to addresses not in live.
func (p *connPool) retain(live map[string]bool) {
	p.mu.Lock()
	var drop []*grpc.ClientConn
	for addr, cc := range p.conns {
		if !live[addr] {
			drop = append(drop, cc)
			delete(p.conns, addr)
		}
	}
	p.mu.Unlock()
	for _, cc := range drop {
		cc.Close()
	}
}

func (p *connPool) close() {
	p.mu.Lock()
	conns := p.conns
	p.conns, p.closed = nil, true
	p.mu.Unlock()
	for _, cc := range conns {
		cc.Close()
	}
}
