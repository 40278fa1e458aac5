package master

import (
	"crypto/tls"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// connPool keeps one gRPC connection per tablet server address.
type connPool struct {
	// mu protects the fields below.
	creds  credentials.TransportCredentials
	mu     sync.Mutex
	conns  map[string]*grpc.ClientConn
	closed bool
}

// newConnPool dials over TLS with tlsCfg (whose certificate proves the
// master's identity to the tablet servers), or in plaintext if it is nil.
func newConnPool(tlsCfg *tls.Config) *connPool {
	creds := insecure.NewCredentials()
	if tlsCfg != nil {
		creds = credentials.NewTLS(tlsCfg)
	}
	return &connPool{creds: creds, conns: map[string]*grpc.ClientConn{}}
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
