package devcluster

import (
	"context"
	"testing"
	"time"

	"cloud.google.com/go/bigtable"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/gateway"
	"github.com/tabuladb/tabula/tlsconf"
)

// headers is per-call metadata for the Go Bigtable client: a bearer token
// and whatever else a test makes a caller send.
type headers map[string]string

func (h headers) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return h, nil
}

func (headers) RequireTransportSecurity() bool { return false }

// tlsBigtable opens table of a Go Bigtable client that dials addr over TLS
// trusting the dev CA, presenting files' client certificate if it has
// one, and sending md with every call.
func tlsBigtable(ctx context.Context, t *testing.T, addr string, files tlsconf.Files, md headers, table string) *bigtable.Table {
	t.Helper()
	cfg, err := tlsconf.ClientConfig(files)
	if err != nil {
		t.Fatal(err)
	}
	return openBigtable(ctx, t, addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)), md, table)
}

// openBigtable opens table of a Go Bigtable client that dials addr with
// transport, sending md's metadata with every call.
func openBigtable(ctx context.Context, t *testing.T, addr string, transport grpc.DialOption, md credentials.PerRPCCredentials, table string) *bigtable.Table {
	t.Helper()
	conn, err := grpc.NewClient(addr, transport, grpc.WithPerRPCCredentials(md))
	if err != nil {
		t.Fatal(err)
	}
	// No built-in metrics: outside emulator mode the client would export
	// them to Cloud Monitoring, over HTTP connections that outlive the
	// test (goleak).
	cli, err := bigtable.NewClientWithConfig(ctx, "p", "i", bigtable.ClientConfig{MetricsProvider: bigtable.NoopMetricsProvider{}}, option.WithGRPCConn(conn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close(); conn.Close() })
	return cli.Open(table)
}

// firstWrite writes row "r" through tbl, again until the new table's
// tablet serves.
func firstWrite(ctx context.Context, t *testing.T, what string, tbl *bigtable.Table) {
	t.Helper()
	for {
		err := tbl.Apply(ctx, "r", btSet())
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func btSet() *bigtable.Mutation {
	m := bigtable.NewMutation()
	m.Set("cf", "q", 1000, []byte("v"))
	return m
}

// Through a TLS gateway of an Auth cluster, a Bigtable client's verified
// certificate is its identity: the gateway acts for its common name, and
// the servers check that principal's roles, as for a native caller with
// the same certificate. A read-only certificate reads and is refused
// writes; neither token nor certificate is UNAUTHENTICATED; a token beside
// a certificate wins (as on the native API); a caller that sends the
// assertion itself is refused; a revoked grant is refused.
func TestGatewayRunsCertificateCallersAsThemselves(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c, admin := startWithAdmin(ctx, t, Config{Servers: 1, Auth: true, GatewayAddr: "127.0.0.1:0", GatewayTLS: true})
	if err := admin.Admin().CreateTable(ctx, "gw", []families.Family{families.Default("cf")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := admin.Admin().Grant(ctx, client.Grant{Principal: "reader", Table: "gw", Role: "read"}); err != nil {
		t.Fatal(err)
	}
	readerCert, err := c.PKI().Issue("reader")
	if err != nil {
		t.Fatal(err)
	}
	readerToken, _, err := admin.Admin().CreateToken(ctx, "reader", "gateway cert test")
	if err != nil {
		t.Fatal(err)
	}
	addr := c.GatewayAddr()
	// tabula-admin's certificate writes.
	firstWrite(ctx, t, "the admin certificate's write through the gateway", tlsBigtable(ctx, t, addr, c.PKI().Admin, nil, "gw"))
	reader := tlsBigtable(ctx, t, addr, readerCert, nil, "gw")
	if row, err := reader.ReadRow(ctx, "r"); err != nil || len(row["cf"]) != 1 {
		t.Fatalf("the reader certificate's read through the gateway: %v, %v", row, err)
	}
	if err := reader.Apply(ctx, "r", btSet()); status.Code(err) != codes.PermissionDenied {
		t.Errorf("the reader certificate's write: %v, want PERMISSION_DENIED", err)
	}
	anon := tlsBigtable(ctx, t, addr, tlsconf.Files{CA: c.PKI().CA}, nil, "gw")
	if _, err := anon.ReadRow(ctx, "r"); status.Code(err) != codes.Unauthenticated {
		t.Errorf("a read over TLS with neither token nor certificate: %v, want UNAUTHENTICATED", err)
	}
	// A token beside the admin's certificate: the token's principal.
	mixed := tlsBigtable(ctx, t, addr, c.PKI().Admin, headers{"authorization": "Bearer " + readerToken}, "gw")
	if _, err := mixed.ReadRow(ctx, "r"); err != nil {
		t.Errorf("the reader token beside the admin certificate reads: %v", err)
	}
	if err := mixed.Apply(ctx, "r", btSet()); status.Code(err) != codes.PermissionDenied {
		t.Errorf("the reader token beside the admin certificate writes: %v, want PERMISSION_DENIED (the token wins)", err)
	}
	// A Bigtable caller that asserts someone else itself.
	for name, md := range map[string]headers{
		"reader certificate": {"tabula-acting-for": "tabula-admin"},
		"reader token":       {"tabula-acting-for": "tabula-admin", "authorization": "Bearer " + readerToken},
	} {
		files := readerCert
		if md["authorization"] != "" {
			files = tlsconf.Files{CA: c.PKI().CA}
		}
		forger := tlsBigtable(ctx, t, addr, files, md, "gw")
		if err := forger.Apply(ctx, "r", btSet()); status.Code(err) != codes.PermissionDenied {
			t.Errorf("%s sending tabula-acting-for through the gateway: %v, want PERMISSION_DENIED", name, err)
		}
	}
	// The grant revoked: refused as soon as the servers' caches see it.
	if err := admin.Admin().Revoke(ctx, "reader", "gw"); err != nil {
		t.Fatal(err)
	}
	waitRefused(t, "a certificate whose grant was revoked", codes.PermissionDenied, func() error {
		_, err := reader.ReadRow(ctx, "r")
		return err
	})
}

// The assertion from anyone but the gateway identity is refused by the
// servers, natively too: a client with a user's certificate, with a
// token, or with both the gateway's certificate and a token; the gateway
// identity alone has no rights; and a gateway whose client presents some
// other certificate (here the admin's, which may do anything) cannot act
// for its callers: their calls are refused, never run with its rights.
func TestOnlyTheGatewayIdentityActsForOthers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c, admin := startWithAdmin(ctx, t, Config{Servers: 1, Auth: true})
	if err := admin.Admin().CreateTable(ctx, "gw", []families.Family{families.Default("cf")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := admin.Admin().Grant(ctx, client.Grant{Principal: "reader", Table: "gw", Role: "read"}); err != nil {
		t.Fatal(err)
	}
	set := func() *client.Mutation { return client.NewMutation().Set("cf", []byte("q"), 1000, []byte("v")) }
	for { // until the new tablet serves
		err := admin.Open("gw").Apply(ctx, []byte("r"), set())
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the admin's write: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	readerCert, err := c.PKI().Issue("reader")
	if err != nil {
		t.Fatal(err)
	}
	native := func(files tlsconf.Files, token string) *client.Client {
		cfg, err := tlsconf.ClientConfig(files)
		if err != nil {
			t.Fatal(err)
		}
		cli, err := client.NewClientWithOptions(ctx, client.Options{Masters: []string{c.MasterAddr()}, TLS: cfg, Token: token})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cli.Close() })
		return cli
	}
	asAdmin := client.WithActingFor(ctx, AdminName)
	asReader := client.WithActingFor(ctx, "reader")
	if err := native(readerCert, "").Open("gw").Apply(asAdmin, []byte("r"), set()); status.Code(err) != codes.PermissionDenied {
		t.Errorf("a user's certificate acting for the admin: %v, want PERMISSION_DENIED", err)
	}
	if err := native(tlsconf.Files{CA: c.PKI().CA}, c.AdminToken()).Open("gw").Apply(asReader, []byte("r"), set()); status.Code(err) != codes.PermissionDenied {
		t.Errorf("the admin's token acting for the reader: %v, want PERMISSION_DENIED", err)
	}
	if _, err := native(c.PKI().Gateway, c.AdminToken()).Open("gw").ReadRow(asReader, []byte("r")); status.Code(err) != codes.PermissionDenied {
		t.Errorf("the gateway's certificate with a token, acting for the reader: %v, want PERMISSION_DENIED", err)
	}
	gw := native(c.PKI().Gateway, "")
	if _, err := gw.Open("gw").ReadRow(ctx, []byte("r")); status.Code(err) != codes.PermissionDenied {
		t.Errorf("the gateway identity on its own reads: %v, want PERMISSION_DENIED (it has no rights)", err)
	}
	if row, err := gw.Open("gw").ReadRow(asReader, []byte("r")); err != nil || len(row.Cells) == 0 {
		t.Errorf("the gateway identity acting for the reader reads: %v, %v", row, err)
	}
	if err := gw.Open("gw").Apply(asReader, []byte("r"), set()); status.Code(err) != codes.PermissionDenied {
		t.Errorf("the gateway identity acting for the reader writes: %v, want PERMISSION_DENIED", err)
	}

	// A gateway whose client is the admin, not the gateway identity.
	gwServer, err := tlsconf.ServerConfig(c.PKI().Gateway)
	if err != nil {
		t.Fatal(err)
	}
	p, err := gateway.Start("127.0.0.1:0", native(c.PKI().Admin, ""), gateway.Options{CallerAuth: true, TLS: gwServer})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	reader := tlsBigtable(ctx, t, p.Addr(), readerCert, nil, "gw")
	if _, err := reader.ReadRow(ctx, "r"); status.Code(err) != codes.PermissionDenied {
		t.Errorf("a reader certificate through a gateway without the gateway identity: %v, want PERMISSION_DENIED", err)
	}
	if err := reader.Apply(ctx, "r", btSet()); status.Code(err) != codes.PermissionDenied {
		t.Errorf("a write through a gateway without the gateway identity: %v, want PERMISSION_DENIED (never the admin's rights)", err)
	}
}
