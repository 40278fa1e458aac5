package master

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/tlsconf"
)

// TestMasterTalksOnlyToTabletServers: over TLS the master's connections
// accept a server only if its certificate names a tablet server; another
// certificate from the same CA (a user's, with a matching address) is
// refused before any call reaches it.
func TestMasterTalksOnlyToTabletServers(t *testing.T) {
	pki, err := tlsconf.GenerateDev(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	serve := func(files tlsconf.Files) string {
		cfg, err := tlsconf.ServerConfig(files)
		if err != nil {
			t.Fatal(err)
		}
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(cfg)))
		tabulapb.RegisterTabletServerServer(srv, tabulapb.UnimplementedTabletServerServer{})
		go srv.Serve(lis)
		t.Cleanup(srv.Stop)
		return lis.Addr().String()
	}
	dial, err := tlsconf.ClientConfig(pki.Master)
	if err != nil {
		t.Fatal(err)
	}
	p := newConnPool(dial)
	defer p.close()
	call := func(addr string) error {
		c, err := p.client(addr)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = c.ServerStats(ctx, &tabulapb.ServerStatsRequest{})
		return err
	}
	// A real tablet server's certificate: the call reaches the server
	// (which does not implement it here).
	if err := call(serve(pki.TabletServer)); status.Code(err) != codes.Unimplemented {
		t.Fatalf("to a tablet server: %v, want UNIMPLEMENTED from the server", err)
	}
	// The admin's certificate, same CA, same address: refused.
	err = call(serve(pki.Admin))
	if err == nil || status.Code(err) == codes.Unimplemented || !strings.Contains(err.Error(), "not a tablet server") {
		t.Fatalf("to a server with the admin's certificate: %v, want the handshake refused", err)
	}
}
