package metrics

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

func TestGRPCCountsAndTimesByMethodAndCode(t *testing.T) {
	reg := NewRegistry()
	g := NewGRPC(Track(ForServer(reg, "ts-1")))
	ctx := context.Background()
	ok := func(context.Context, any) (any, error) { return "resp", nil }
	notFound := func(context.Context, any) (any, error) { return nil, status.Error(codes.NotFound, "no") }
	plain := func(context.Context, any) (any, error) { return nil, errors.New("not a status") }
	info := &grpc.UnaryServerInfo{FullMethod: "/tabula.TabletServer/MutateRow"}
	for range 3 {
		if resp, err := g.unary(ctx, nil, info, ok); resp != "resp" || err != nil {
			t.Fatalf("interceptor changed the answer: %v, %v", resp, err)
		}
	}
	if _, err := g.unary(ctx, nil, info, notFound); status.Code(err) != codes.NotFound {
		t.Fatalf("interceptor changed the error: %v", err)
	}
	g.unary(ctx, nil, info, plain)
	sinfo := &grpc.StreamServerInfo{FullMethod: "/tabula.TabletServer/ReadRows"}
	g.stream(nil, nil, sinfo, func(any, grpc.ServerStream) error { return nil })

	fs, err := Gather(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		method, code string
		want         float64
	}{{"MutateRow", "OK", 3}, {"MutateRow", "NotFound", 1}, {"MutateRow", "Unknown", 1}, {"ReadRows", "OK", 1}} {
		match := map[string]string{"service": "tabula.TabletServer", "method": c.method, "code": c.code, "server": "ts-1"}
		for _, name := range []string{"tabula_grpc_server_handled_total", "tabula_grpc_server_handling_seconds"} {
			if got, _ := fs.Sum(name, match); got != c.want {
				t.Errorf("%s%v = %v, want %v", name, match, got, c.want)
			}
		}
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if _, ok := fs[name]; !ok {
			t.Errorf("registry lacks %s (Go runtime and process collectors)", name)
		}
	}
}

// Init makes the OK series of every method exist at zero before any call.
func TestGRPCInitCreatesSeriesOfEveryMethod(t *testing.T) {
	reg := NewRegistry()
	g := NewGRPC(Track(reg))
	srv := grpc.NewServer(g.ServerOptions()...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	g.Init(srv)
	fs, _ := Gather(reg)
	for _, m := range []string{"Check", "Watch", "List"} {
		if _, ok := fs.Sum("tabula_grpc_server_handled_total", map[string]string{"service": "grpc.health.v1.Health", "method": m, "code": "OK"}); !ok {
			t.Fatalf("no series for %s", m)
		}
		mf := fs["tabula_grpc_server_handled_total"]
		found := false
		for _, x := range mf.GetMetric() {
			for _, lp := range x.GetLabel() {
				if lp.GetName() == "method" && lp.GetValue() == m {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("Init made no series for method %s", m)
		}
	}
}

// Metrics off: nil everywhere, nothing installed.
func TestNilMeansOff(t *testing.T) {
	if ForServer(nil, "x") != nil || Track(nil) != nil || NewGRPC(nil) != nil {
		t.Fatal("nil registerer must give nil")
	}
	var g *GRPC
	if g.ServerOptions() != nil {
		t.Fatal("nil GRPC installs interceptors")
	}
	g.Init(grpc.NewServer())
	var grp *Group
	grp.Close()
	grp.MustRegister()
}

// A component that stops takes its series back, so its next incarnation
// in the same process registers again.
func TestGroupCloseLetsAComponentRegisterAgain(t *testing.T) {
	reg := NewRegistry()
	for i := range 2 {
		grp := Track(ForServer(reg, "ts-1"))
		g := NewGRPC(grp) // panics on a duplicate registration
		g.done("/tabula.TabletServer/MutateRow", time.Now(), nil)
		fs, _ := Gather(reg)
		if v, _ := fs.Sum("tabula_grpc_server_handled_total", nil); v != 1 {
			t.Fatalf("incarnation %d: handled = %v, want 1 (its own call only)", i, v)
		}
		grp.Close()
		fs, _ = Gather(reg)
		if _, ok := fs["tabula_grpc_server_handled_total"]; ok {
			t.Fatalf("incarnation %d: series still served after Close", i)
		}
	}
}

func TestHandlerServesTheTextFormat(t *testing.T) {
	reg := NewRegistry()
	g := NewGRPC(Track(reg))
	g.done("/tabula.Master/CreateTable", time.Now(), nil)
	rec := httptest.NewRecorder()
	Handler(reg).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("status %d", rec.Code)
	}
	fs, err := Parse(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := fs.Sum("tabula_grpc_server_handled_total", map[string]string{"method": "CreateTable"}); v != 1 {
		t.Fatalf("CreateTable handled = %v, want 1", v)
	}
}

// The documentation's metric rows are found, with their types.
func TestDocumentedParsesOperations(t *testing.T) {
	f, err := os.Open("../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := Documented(f)
	if err != nil {
		t.Fatal(err)
	}
	if doc["tabula_grpc_server_handled_total"] != "counter" || doc["tabula_grpc_server_handling_seconds"] != "histogram" {
		t.Fatalf("gRPC series not documented with their types: %v", doc)
	}
}
