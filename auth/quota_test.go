package auth

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

// TestQuotaRules: a table's quota is its admin's (a grant on the table,
// its namespace or the cluster); a namespace's and a principal's quota is
// the cluster admin's only, so an admin of "ns:*" cannot lift its own
// namespace's limits; listing needs read on the cluster.
func TestQuotaRules(t *testing.T) {
	cli := startEtcd(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := meta.NewLayout("")
	cache := startCache(t, ctx, cli, l)
	if err := cache.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	tok := map[string]string{}
	for _, p := range []string{"root", "nsadmin", "tadmin", "writer", "reader"} {
		tk, _, err := CreateToken(ctx, cli, l, p, "", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		tok[p] = tk
	}
	for _, g := range []Grant{{"root", AllTables, Admin}, {"nsadmin", NamespaceGrant("a"), Admin}, {"tadmin", "a:t", Admin},
		{"writer", AllTables, Write}, {"reader", AllTables, Read}} {
		if err := SetGrant(ctx, cli, l, g); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "grants seen", func() bool { return cache.RoleOn("reader", "x") == Read && cache.RoleOn("tadmin", "a:t") == Admin })
	g := NewGuard(GuardConfig{Rules: MasterRules(), Cache: cache, MutualTLS: true})
	set := func(scope, name string) *pb.SetQuotaRequest { return &pb.SetQuotaRequest{Scope: scope, Name: name} }
	rm := func(scope, name string) *pb.RemoveQuotaRequest {
		return &pb.RemoveQuotaRequest{Scope: scope, Name: name}
	}
	const svc = "/tabula.v1.Quotas/"
	for _, c := range []struct {
		who    string
		method string
		req    any
		want   codes.Code
	}{
		{"root", "SetQuota", set("principal", "batch"), codes.OK},
		{"root", "SetQuota", set("namespace", "a"), codes.OK},
		{"root", "RemoveQuota", rm("table", "a:t"), codes.OK},
		{"writer", "SetQuota", set("principal", "writer"), codes.PermissionDenied},
		{"writer", "SetQuota", set("table", "a:t"), codes.PermissionDenied},
		{"writer", "RemoveQuota", rm("principal", "writer"), codes.PermissionDenied},
		{"reader", "RemoveQuota", rm("table", "a:t"), codes.PermissionDenied},
		{"nsadmin", "SetQuota", set("table", "a:t"), codes.OK},
		{"nsadmin", "SetQuota", set("table", "b:t"), codes.PermissionDenied},
		{"nsadmin", "SetQuota", set("namespace", "a"), codes.PermissionDenied},
		{"nsadmin", "RemoveQuota", rm("namespace", "a"), codes.PermissionDenied},
		{"nsadmin", "SetQuota", set("principal", "nsadmin"), codes.PermissionDenied},
		{"tadmin", "SetQuota", set("table", "a:t"), codes.OK},
		{"tadmin", "RemoveQuota", rm("table", "a:u"), codes.PermissionDenied},
		{"reader", "ListQuotas", &pb.ListQuotasRequest{}, codes.OK},
		{"tadmin", "ListQuotas", &pb.ListQuotasRequest{}, codes.PermissionDenied},
		{"", "ListQuotas", &pb.ListQuotasRequest{}, codes.Unauthenticated},
		{"", "SetQuota", set("table", "t"), codes.Unauthenticated},
	} {
		_, _, err := g.check(callCtx("", tok[c.who]), svc+c.method, c.req)
		if got := status.Code(err); got != c.want {
			t.Errorf("%s %s %v: %v (%v), want %v", c.who, c.method, c.req, got, err, c.want)
		}
	}
}
