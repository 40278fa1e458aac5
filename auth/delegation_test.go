package auth

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

// actingFor adds "tabula-acting-for: names..." to a call's context made
// by callCtx.
func actingFor(ctx context.Context, names ...string) context.Context {
	md, _ := metadata.FromIncomingContext(ctx)
	md = md.Copy()
	md.Append(ActingForKey, names...)
	return metadata.NewIncomingContext(ctx, md)
}

// TestGuardDelegation: the gateway identity's certificate may run a call
// as another principal, whose roles alone apply (a reader reads and is
// refused writes; a grant revoked is refused); everyone else who asserts
// it is refused (another certificate, a token caller, a token beside the
// gateway's certificate, a caller without a certificate, a port that
// verifies no certificates), and no one acts for the cluster's own
// identities or reaches the master-only calls by it.
func TestGuardDelegation(t *testing.T) {
	cli := startEtcd(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := meta.NewLayout("")
	cache := startCache(t, ctx, cli, l)
	if err := cache.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	admin, _, err := CreateToken(ctx, cli, l, "admin", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []Grant{{"reader", "t", Read}, {"writer", "t", Write}, {"admin", AllTables, Admin}, {"gone", "t", Read}} {
		if err := SetGrant(ctx, cli, l, g); err != nil {
			t.Fatal(err)
		}
	}
	if err := SetGrant(ctx, cli, l, Grant{GatewayName, "t", Read}); err == nil {
		t.Fatalf("a grant to the gateway identity was accepted: it acts for others, never with rights of its own")
	}
	if _, _, err := CreateToken(ctx, cli, l, GatewayName, "", time.Now()); err == nil {
		t.Fatalf("a token for the gateway identity was issued: a token caller could then act for anyone")
	}
	if err := DeleteGrant(ctx, cli, l, "gone", "t"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "cache current", func() bool {
		return cache.RoleOn("admin", "t") == Admin && cache.RoleOn("gone", "t") == None
	})

	ts := NewGuard(GuardConfig{Rules: TabletServerRules(), Cache: cache, MutualTLS: true})
	ms := NewGuard(GuardConfig{Rules: MasterRules(), Cache: cache, MutualTLS: true})
	plainPort := NewGuard(GuardConfig{Rules: TabletServerRules(), Cache: cache})
	noAuth := NewGuard(GuardConfig{Rules: TabletServerRules(), MutualTLS: true})
	ref := &pb.TabletRef{Table: "t"}
	read := &pb.ReadRowsRequest{Tablet: ref}
	write := &pb.MutateRowRequest{Tablet: ref}
	gw := func(names ...string) context.Context { return actingFor(callCtx(GatewayName, ""), names...) }
	const tsSvc, mSvc = "/tabula.v1.TabletServer/", "/tabula.v1.Master/"
	cases := []struct {
		name   string
		g      *Guard
		ctx    context.Context
		method string
		req    any
		want   codes.Code
	}{
		{"gateway for reader reads", ts, gw("reader"), "ReadRows", read, codes.OK},
		{"gateway for reader writes", ts, gw("reader"), "MutateRow", write, codes.PermissionDenied},
		{"gateway for writer writes", ts, gw("writer"), "MutateRow", write, codes.OK},
		{"gateway for a revoked grant", ts, gw("gone"), "ReadRows", read, codes.PermissionDenied},
		{"gateway for a stranger", ts, gw("stranger"), "ReadRows", read, codes.PermissionDenied},
		{"gateway for admin deletes", ms, gw("admin"), "DeleteTable", &pb.DeleteTableRequest{Table: "t"}, codes.OK},
		{"gateway for reader deletes", ms, gw("reader"), "DeleteTable", &pb.DeleteTableRequest{Table: "t"}, codes.PermissionDenied},
		{"gateway alone has no rights", ts, callCtx(GatewayName, ""), "ReadRows", read, codes.PermissionDenied},
		{"gateway for the master", ts, gw(MasterName), "LoadTablet", &pb.LoadTabletRequest{}, codes.PermissionDenied},
		{"gateway for the master reads", ts, gw(MasterName), "ReadRows", read, codes.PermissionDenied},
		{"gateway for a tablet server", ts, gw(TabletServerName), "ReadRows", read, codes.PermissionDenied},
		{"gateway for itself", ts, gw(GatewayName), "ReadRows", read, codes.PermissionDenied},
		{"gateway for admin unloads", ts, gw("admin"), "UnloadTablet", &pb.UnloadTabletRequest{Tablet: ref}, codes.PermissionDenied},
		{"gateway for two", ts, gw("reader", "admin"), "ReadRows", read, codes.PermissionDenied},
		{"gateway for a bad name", ts, gw("-x"), "ReadRows", read, codes.PermissionDenied},
		{"gateway for no one", ts, gw(""), "ReadRows", read, codes.PermissionDenied},
		{"other cert asserts", ts, actingFor(callCtx("reader", ""), "admin"), "ReadRows", read, codes.PermissionDenied},
		{"master cert asserts", ts, actingFor(callCtx(MasterName, ""), "admin"), "MutateRow", write, codes.PermissionDenied},
		{"token asserts", ts, actingFor(callCtx("", admin), "reader"), "ReadRows", read, codes.PermissionDenied},
		{"token beside gateway cert", ts, actingFor(callCtx(GatewayName, admin), "reader"), "ReadRows", read, codes.PermissionDenied},
		{"no credentials assert", ts, actingFor(callCtx("", ""), "admin"), "ReadRows", read, codes.PermissionDenied},
		{"plaintext port", plainPort, gw("admin"), "ReadRows", read, codes.PermissionDenied},
		{"no auth still refuses others", noAuth, actingFor(callCtx("reader", ""), "admin"), "ReadRows", read, codes.PermissionDenied},
		{"no auth, gateway for admin", noAuth, gw("admin"), "ReadRows", read, codes.OK},
		{"health with a bad assertion", ts, actingFor(callCtx("", ""), "admin"), "/grpc.health.v1.Health/Check", nil, codes.PermissionDenied},
	}
	for _, c := range cases {
		method := c.method
		if method[0] != '/' {
			method = tsSvc + method
			if c.g == ms {
				method = mSvc + c.method
			}
		}
		_, _, err := c.g.check(c.ctx, method, c.req)
		if got := status.Code(err); got != c.want {
			t.Errorf("%s: %s = %v (%v), want %v", c.name, c.method, got, err, c.want)
		}
	}
	// The identity a delegated call carries is the principal's, marked as
	// delegated: the audit log and quotas see who it is and by whom.
	cctx, _, err := ts.check(gw("reader"), tsSvc+"ReadRows", read)
	if err != nil {
		t.Fatal(err)
	}
	if id := IdentityFrom(cctx); id != (Identity{Name: "reader", Method: ByGateway, Via: GatewayName}) {
		t.Fatalf("identity %+v", id)
	}
}
