package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	pb "github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

// callCtx is the context of an incoming call with an optional verified
// certificate (cn) and bearer token.
func callCtx(cn, token string) context.Context {
	ctx := context.Background()
	p := &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4242}}
	if cn != "" {
		cert := &x509.Certificate{Subject: pkix.Name{CommonName: cn}}
		p.AuthInfo = credentials.TLSInfo{State: tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{cert}}}}
	}
	ctx = peer.NewContext(ctx, p)
	if token != "" {
		ctx = metadata.NewIncomingContext(ctx, metadata.Pairs("authorization", "Bearer "+token))
	}
	return ctx
}

func TestGuardDecisions(t *testing.T) {
	cli := startEtcd(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := meta.NewLayout("")
	cache := startCache(t, ctx, cli, l)
	if err := cache.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	reader, _, err := CreateToken(ctx, cli, l, "reader", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	writer, _, _ := CreateToken(ctx, cli, l, "writer", "", time.Now())
	admin, _, _ := CreateToken(ctx, cli, l, "admin", "", time.Now())
	revoked, rinfo, _ := CreateToken(ctx, cli, l, "reader", "", time.Now())
	for _, g := range []Grant{{"reader", "t", Read}, {"writer", "t", Write}, {"admin", AllTables, Admin}, {"certuser", "t", Read}} {
		if err := SetGrant(ctx, cli, l, g); err != nil {
			t.Fatal(err)
		}
	}
	if err := RevokeToken(ctx, cli, l, rinfo.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, "cache current", func() bool {
		_, err := cache.Authenticate(revoked)
		return err != nil && cache.RoleOn("certuser", "t") == Read
	})

	ts := NewGuard(GuardConfig{Rules: TabletServerRules(), Cache: cache, MutualTLS: true})
	ms := NewGuard(GuardConfig{Rules: MasterRules(), Cache: cache, MutualTLS: true})
	ref := &pb.TabletRef{Table: "t"}
	read := &pb.ReadRowsRequest{Tablet: ref}
	write := &pb.MutateRowRequest{Tablet: ref}
	other := &pb.MutateRowRequest{Tablet: &pb.TabletRef{Table: "u"}}
	batch := &pb.MutateRowsRequest{Entries: []*pb.MutateRowsRequest_Entry{{Tablet: ref}, {Tablet: &pb.TabletRef{Table: "u"}}}}
	const tsSvc, mSvc = "/tabula.v1.TabletServer/", "/tabula.v1.Master/"
	cases := []struct {
		name   string
		g      *Guard
		ctx    context.Context
		method string
		req    any
		want   codes.Code
	}{
		{"no credentials read", ts, callCtx("", ""), "ReadRows", read, codes.Unauthenticated},
		{"reader reads", ts, callCtx("", reader), "ReadRows", read, codes.OK},
		{"reader writes", ts, callCtx("", reader), "MutateRow", write, codes.PermissionDenied},
		{"writer writes", ts, callCtx("", writer), "MutateRow", write, codes.OK},
		{"writer writes elsewhere", ts, callCtx("", writer), "MutateRow", other, codes.PermissionDenied},
		{"batch over two tables", ts, callCtx("", writer), "MutateRows", batch, codes.PermissionDenied},
		{"admin batch", ts, callCtx("", admin), "MutateRows", batch, codes.OK},
		{"revoked token", ts, callCtx("", revoked), "ReadRows", read, codes.Unauthenticated},
		{"garbage token", ts, callCtx("", "hunter2"), "ReadRows", read, codes.Unauthenticated},
		{"cert user reads", ts, callCtx("certuser", ""), "ReadRows", read, codes.OK},
		{"bad token beats good cert", ts, callCtx("certuser", "hunter2"), "ReadRows", read, codes.Unauthenticated},
		{"forged unload, no creds", ts, callCtx("", ""), "UnloadTablet", &pb.UnloadTabletRequest{Tablet: ref}, codes.Unauthenticated},
		{"forged schema, admin token", ts, callCtx("", admin), "UpdateSchema", &pb.UpdateSchemaRequest{}, codes.PermissionDenied},
		{"forged load, other cert", ts, callCtx("tabula-tabletserver", ""), "LoadTablet", &pb.LoadTabletRequest{}, codes.PermissionDenied},
		{"master loads", ts, callCtx(MasterName, ""), "LoadTablet", &pb.LoadTabletRequest{}, codes.OK},
		{"forged batch load, other cert", ts, callCtx("tabula-tabletserver", ""), "LoadTablets", &pb.LoadTabletsRequest{}, codes.PermissionDenied},
		{"master loads a batch", ts, callCtx(MasterName, ""), "LoadTablets", &pb.LoadTabletsRequest{}, codes.OK},
		{"master cert has no data role", ts, callCtx(MasterName, ""), "ReadRows", read, codes.PermissionDenied},
		{"unknown method", ts, callCtx("", admin), "DropEverything", read, codes.PermissionDenied},
		{"whoami open", ms, callCtx("", ""), "WhoAmI", &pb.WhoAmIRequest{}, codes.OK},
		{"list tables any user", ms, callCtx("", reader), "ListTables", &pb.ListTablesRequest{}, codes.OK},
		{"list tables anonymous", ms, callCtx("", ""), "ListTables", &pb.ListTablesRequest{}, codes.Unauthenticated},
		{"reader describes", ms, callCtx("", reader), "DescribeTable", &pb.DescribeTableRequest{Table: "t"}, codes.OK},
		{"reader deletes", ms, callCtx("", reader), "DeleteTable", &pb.DeleteTableRequest{Table: "t"}, codes.PermissionDenied},
		{"writer alters", ms, callCtx("", writer), "AddFamily", &pb.FamilyRequest{Table: "t"}, codes.PermissionDenied},
		{"admin deletes", ms, callCtx("", admin), "DeleteTable", &pb.DeleteTableRequest{Table: "t"}, codes.OK},
		{"writer flushes", ms, callCtx("", writer), "FlushTable", &pb.FlushTableRequest{Table: "t"}, codes.PermissionDenied},
		{"reader flushes", ms, callCtx("", reader), "FlushTable", &pb.FlushTableRequest{Table: "t"}, codes.PermissionDenied},
		{"admin flushes", ms, callCtx("", admin), "FlushTable", &pb.FlushTableRequest{Table: "t"}, codes.OK},
		{"writer creates token", ms, callCtx("", writer), "CreateToken", &pb.CreateTokenRequest{}, codes.PermissionDenied},
		{"admin creates token", ms, callCtx("", admin), "CreateToken", &pb.CreateTokenRequest{}, codes.OK},
		{"reader lists servers", ms, callCtx("", reader), "ListServers", &pb.ListServersRequest{}, codes.PermissionDenied},
	}
	for _, c := range cases {
		svc := tsSvc
		if c.g == ms {
			svc = mSvc
		}
		_, _, err := c.g.check(c.ctx, svc+c.method, c.req)
		if got := status.Code(err); got != c.want {
			t.Errorf("%s: %s = %v (%v), want %v", c.name, c.method, got, err, c.want)
		}
	}
}

// TestGuardWithoutAuth: a plaintext dev cluster checks nothing; TLS alone
// still reserves the master-only calls to the master's certificate.
func TestGuardWithoutAuth(t *testing.T) {
	plain := NewGuard(GuardConfig{Rules: TabletServerRules()})
	tlsOnly := NewGuard(GuardConfig{Rules: TabletServerRules(), MutualTLS: true})
	const unload = "/tabula.v1.TabletServer/UnloadTablet"
	req := &pb.UnloadTabletRequest{}
	if _, _, err := plain.check(callCtx("", ""), unload, req); err != nil {
		t.Errorf("plaintext guard refused: %v", err)
	}
	if _, _, err := tlsOnly.check(callCtx("someone", ""), unload, req); status.Code(err) != codes.PermissionDenied {
		t.Errorf("TLS guard: %v, want PERMISSION_DENIED", err)
	}
	if _, _, err := tlsOnly.check(callCtx("", ""), "/tabula.v1.TabletServer/ReadRows", &pb.ReadRowsRequest{}); err != nil {
		t.Errorf("TLS guard without auth refused a read: %v", err)
	}
}

// TestEveryMethodHasARule: a method added to a service without a rule
// would be refused to everyone; this names it instead.
func TestEveryMethodHasARule(t *testing.T) {
	check := func(svc string, names []string, rules map[string]Rule) {
		for _, n := range names {
			full := "/" + svc + "/" + n
			if _, ok := rules[full]; !ok {
				t.Errorf("%s has no rule", full)
			}
		}
		own := 0 // the rules of svc itself; the health service's are shared
		for full := range rules {
			if strings.HasPrefix(full, "/"+svc+"/") {
				own++
			}
		}
		if own != len(names) {
			t.Errorf("%s: %d rules for %d methods", svc, own, len(names))
		}
		for full, r := range HealthRules() {
			if got, ok := rules[full]; !ok || !got.Open || !r.Open {
				t.Errorf("%s: health method %s is not open to probes without credentials", svc, full)
			}
		}
	}
	var ms, ts []string
	for _, m := range pb.Master_ServiceDesc.Methods {
		ms = append(ms, m.MethodName)
	}
	for _, m := range pb.Master_ServiceDesc.Streams {
		ms = append(ms, m.StreamName)
	}
	for _, m := range pb.TabletServer_ServiceDesc.Methods {
		ts = append(ts, m.MethodName)
	}
	for _, m := range pb.TabletServer_ServiceDesc.Streams {
		ts = append(ts, m.StreamName)
	}
	check(pb.Master_ServiceDesc.ServiceName, ms, MasterRules())
	check(pb.TabletServer_ServiceDesc.ServiceName, ts, TabletServerRules())
	var ns []string
	for _, m := range pb.Namespaces_ServiceDesc.Methods {
		ns = append(ns, m.MethodName)
	}
	check(pb.Namespaces_ServiceDesc.ServiceName, ns, MasterRules())
	var qs []string
	for _, m := range pb.Quotas_ServiceDesc.Methods {
		qs = append(qs, m.MethodName)
	}
	check(pb.Quotas_ServiceDesc.ServiceName, qs, MasterRules())
	var bl []string
	for _, m := range pb.BulkLoad_ServiceDesc.Streams {
		bl = append(bl, m.StreamName)
	}
	check(pb.BulkLoad_ServiceDesc.ServiceName, bl, TabletServerRules())
}

// countingHandler counts the log records of each message.
type countingHandler struct {
	mu     sync.Mutex
	counts map[string]int
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.counts[r.Message]++
	h.mu.Unlock()
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }

// TestRefusalLogIsRateLimited: a flood of refused calls writes at most 20
// refusal lines a second, then one line counting the rest.
func TestRefusalLogIsRateLimited(t *testing.T) {
	h := &countingHandler{counts: map[string]int{}}
	g := NewGuard(GuardConfig{Rules: TabletServerRules(), MutualTLS: true, Log: slog.New(h)})
	sec := int64(1000)
	g.now = func() time.Time { return time.Unix(sec, 0) }
	for range 500 {
		if _, _, err := g.check(callCtx("", ""), "/tabula.v1.TabletServer/UnloadTablet", &pb.UnloadTabletRequest{}); status.Code(err) != codes.Unauthenticated {
			t.Fatalf("refusal: %v", err)
		}
	}
	sec++ // the next second: the count of the suppressed lines, then logging again
	g.check(callCtx("", ""), "/tabula.v1.TabletServer/UnloadTablet", &pb.UnloadTabletRequest{})
	if got := h.counts["auth: refused"]; got != 21 {
		t.Errorf("%d refusal lines for 501 refusals in two seconds, want 20 + 1", got)
	}
	if got := h.counts["auth: refusals not logged"]; got != 1 {
		t.Errorf("%d lines counting the suppressed refusals, want 1", got)
	}
}
