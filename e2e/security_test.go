package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/internal/testkit"
	"github.com/tabuladb/tabula/tlsconf"
)

// TestSecurityRefusesStrangers runs a cluster of real processes with TLS on
// every port and auth on, and checks that each kind of stranger is refused
// while the data stays intact: a client without credentials
// (UNAUTHENTICATED), a plaintext client (no connection), a read-only token
// that tries to write or administer (PERMISSION_DENIED), a revoked token
// (UNAUTHENTICATED), and forged master-only calls to a tablet server with an
// admin token, an admin certificate or nothing (refused; the tablet is
// still served with its data). The master's log holds audit lines.
func TestSecurityRefusesStrangers(t *testing.T) {
	slow(t)
	c := startCluster(t, clusterOptions{masters: 1, servers: 2, secure: true})
	admin := c.newClient(t)
	createTable(t, c, admin, "sec", nil)
	createTable(t, c, admin, "other", nil)
	row := []byte("r1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := admin.Open("sec").Apply(ctx, row, rowMutation("r1")); err != nil {
		t.Fatalf("admin write: %v", err)
	}

	connect := func(o client.Options) (*client.Client, error) {
		o.Masters = c.masterAddrs()
		o.ConnectTimeout = 5 * time.Second
		o.RetryTimeout = 5 * time.Second
		cl, err := client.NewClientWithOptions(ctx, o)
		if err == nil {
			t.Cleanup(func() { cl.Close() })
		}
		return cl, err
	}
	caOnly := c.sec.clientTLS(t)

	// No credentials: the connection works (WhoAmI needs none), nothing else.
	anon, err := connect(client.Options{TLS: caOnly})
	if err != nil {
		t.Fatalf("anonymous TLS client: %v", err)
	}
	_, err = anon.Open("sec").ReadRow(ctx, row)
	testkit.WantCode(t, "anonymous read", err, codes.Unauthenticated, "")
	testkit.WantCode(t, "anonymous write", anon.Open("sec").Apply(ctx, []byte("x"), rowMutation("x")), codes.Unauthenticated, "")
	_, err = anon.Admin().ListTables(ctx)
	testkit.WantCode(t, "anonymous list tables", err, codes.Unauthenticated, "")
	testkit.WantCode(t, "anonymous delete table", anon.Admin().DeleteTable(ctx, "sec"), codes.Unauthenticated, "")

	// Plaintext: the TLS ports do not talk to it at all.
	if _, err := connect(client.Options{}); err == nil {
		t.Error("a plaintext client connected to a TLS master")
	}

	// A read-only token reads its table and nothing more.
	tok, info, err := admin.Admin().CreateToken(ctx, "reader", "e2e read-only")
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Admin().Grant(ctx, client.Grant{Principal: "reader", Table: "sec", Role: "read"}); err != nil {
		t.Fatal(err)
	}
	reader, err := connect(client.Options{TLS: caOnly, Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	eventuallyCode(t, "reader reads its table", func() error { _, err := reader.Open("sec").ReadRow(ctx, row); return err }, codes.OK)
	got, err := reader.Open("sec").ReadRow(ctx, row)
	if err != nil || len(got.Cells) != 2 {
		t.Errorf("reader's read: %d cells, %v; want the row's 2", len(got.Cells), err)
	}
	testkit.WantCode(t, "reader writes", reader.Open("sec").Apply(ctx, []byte("x"), rowMutation("x")), codes.PermissionDenied, "")
	_, err = reader.Open("other").ReadRow(ctx, row)
	testkit.WantCode(t, "reader reads another table", err, codes.PermissionDenied, "")
	testkit.WantCode(t, "reader deletes the table", reader.Admin().DeleteTable(ctx, "sec"), codes.PermissionDenied, "")
	_, _, err = reader.Admin().CreateToken(ctx, "reader", "escalate")
	testkit.WantCode(t, "reader mints a token", err, codes.PermissionDenied, "")
	testkit.WantCode(t, "reader grants itself write", reader.Admin().Grant(ctx, client.Grant{Principal: "reader", Table: "sec", Role: "write"}), codes.PermissionDenied, "")

	// Revoked: refused everywhere once the servers' watches see it.
	if err := admin.Admin().RevokeToken(ctx, info.ID); err != nil {
		t.Fatal(err)
	}
	eventuallyCode(t, "revoked token reads", func() error { _, err := reader.Open("sec").ReadRow(ctx, row); return err }, codes.Unauthenticated)
	eventuallyCode(t, "revoked token describes", func() error { _, err := reader.Admin().DescribeTable(ctx, "sec"); return err }, codes.Unauthenticated)
	_, err = connect(client.Options{TLS: caOnly, Token: tok})
	testkit.WantCode(t, "new client with a revoked token", err, codes.Unauthenticated, "")

	// Forged master calls to the tablet server that holds "sec".
	ts := waitTablets(t, admin, "sec", nil, opTimeout)
	target := ts[0]
	forge := func(what string, creds credentials.TransportCredentials, perRPC grpc.DialOption, want codes.Code) {
		t.Helper()
		opts := []grpc.DialOption{grpc.WithTransportCredentials(creds)}
		if perRPC != nil {
			opts = append(opts, perRPC)
		}
		conn, err := grpc.NewClient(target.Address, opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		tsc := tabulapb.NewTabletServerClient(conn)
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		defer ccancel()
		ref := &tabulapb.TabletRef{Table: "sec", TabletId: target.ID, Epoch: target.Epoch}
		_, err = tsc.UpdateSchema(cctx, &tabulapb.UpdateSchemaRequest{Schema: &tabulapb.TableSchema{Name: "sec",
			Families: []*tabulapb.Family{{Name: famA, TtlMicros: 1}, {Name: famB, TtlMicros: 1}}}})
		testkit.WantCode(t, what+": UpdateSchema", err, want, "")
		_, err = tsc.UnloadTablet(cctx, &tabulapb.UnloadTabletRequest{Tablet: ref})
		testkit.WantCode(t, what+": UnloadTablet", err, want, "")
		_, err = tsc.CompactTablet(cctx, &tabulapb.CompactTabletRequest{Tablet: ref, Major: true})
		testkit.WantCode(t, what+": CompactTablet", err, want, "")
	}
	forge("admin token", credentials.NewTLS(caOnly), grpc.WithPerRPCCredentials(tokenCreds(c.sec.token)), codes.PermissionDenied)
	forge("no credentials", credentials.NewTLS(caOnly), nil, codes.Unauthenticated)
	adminCert, err := tlsconf.ClientConfig(c.sec.pki.Admin)
	if err != nil {
		t.Fatal(err)
	}
	forge("admin certificate", credentials.NewTLS(adminCert), nil, codes.PermissionDenied)
	// A certificate named tabula-master from another CA fails the handshake.
	rogue, err := tlsconf.GenerateDev(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rogueCfg, err := tlsconf.ClientConfig(tlsconf.Files{CA: c.sec.pki.CA, Cert: rogue.Master.Cert, Key: rogue.Master.Key})
	if err != nil {
		t.Fatal(err)
	}
	forge("rogue master certificate", credentials.NewTLS(rogueCfg), nil, codes.Unavailable)

	// Nothing the strangers tried changed anything: the tablet is still
	// served where it was, with its cells.
	after := waitTablets(t, admin, "sec", nil, opTimeout)
	if after[0].Server != target.Server || after[0].Epoch != target.Epoch {
		t.Errorf("the tablet moved: %+v → %+v", target, after[0])
	}
	if err := admin.Admin().CompactTable(ctx, "sec", true); err != nil {
		t.Fatalf("admin compaction: %v", err)
	}
	got, err = admin.Open("sec").ReadRow(ctx, row)
	if err != nil || len(got.Cells) != 2 {
		t.Errorf("after the forged calls and a major compaction: %d cells, %v; want 2", len(got.Cells), err)
	}

	// Audit lines at the master: the admin's table creation, the refusals.
	b, err := os.ReadFile(c.masters[0].log)
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	for _, want := range []string{
		"msg=audit master=master-1 principal=tabula-admin by=token call=CreateTable table=sec code=OK",
		"call=RevokeToken table=* code=OK",
		`msg="auth: refused" master=master-1 principal=reader by=token call=/tabula.v1.Master/DeleteTable code=PermissionDenied`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the master's log lacks %q", want)
		}
	}
}

// eventuallyCode retries fn until it returns an error of code want (nil
// for OK): grants and revocations reach the servers through an etcd watch,
// in milliseconds; 10 s only bounds a broken watch.
func eventuallyCode(t *testing.T, what string, fn func() error, want codes.Code) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := fn()
		if status.Code(err) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v after 10s, want %v", what, err, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
