package metrics

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// GRPC counts and times the calls of one gRPC server:
//
//	tabula_grpc_server_handled_total{service,method,code}     counter
//	tabula_grpc_server_handling_seconds{service,method,code}  histogram
//
// A stream counts once, when it ends; its time is its whole life. The
// per-call cost is one lookup of the method in a sync.Map and one atomic
// load of its observers for the code (both created once per method and
// code), then a counter add and a histogram observe: no label lookups on
// the hot path. A nil *GRPC installs nothing.
type GRPC struct {
	handled *prometheus.CounterVec
	seconds *prometheus.HistogramVec
	methods sync.Map // full method name -> *methodObservers
}

// numCodes is one more than the largest gRPC code (Unauthenticated, 16).
const numCodes = int(codes.Unauthenticated) + 1

type methodObservers struct {
	service, method string
	// byCode is read without a lock; mu serializes the creation of an
	// entry.
	byCode [numCodes]atomic.Pointer[codeObservers]
	mu     sync.Mutex
}

type codeObservers struct {
	handled prometheus.Counter
	seconds prometheus.Observer
}

// NewGRPC registers the gRPC series with r and returns their
// interceptors; nil r gives nil (metrics off).
func NewGRPC(r *Group) *GRPC {
	if r == nil {
		return nil
	}
	g := &GRPC{
		handled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "grpc_server", Name: "handled_total",
			Help: "gRPC calls completed by this server, by service, method and status code (streams count when they end).",
		}, []string{"service", "method", "code"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Subsystem: "grpc_server", Name: "handling_seconds",
			Help:    "Time from a gRPC call's arrival to its answer (a stream's whole life), by service, method and status code.",
			Buckets: LatencyBuckets,
		}, []string{"service", "method", "code"}),
	}
	r.MustRegister(g.handled, g.seconds)
	return g
}

// ServerOptions returns the interceptors as server options, to put before
// the server's other interceptors so that calls they refuse (auth) are
// counted too. Nil g gives none.
func (g *GRPC) ServerOptions() []grpc.ServerOption {
	if g == nil {
		return nil
	}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(g.unary),
		grpc.ChainStreamInterceptor(g.stream),
	}
}

// Interceptors returns the interceptors ServerOptions installs, for a
// caller that runs a server's handlers without a gRPC server (the tablet
// server's in-process connection, tabletserver/inprocess.go), so that its
// calls are counted the same way. Nil g gives nil interceptors.
func (g *GRPC) Interceptors() (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	if g == nil {
		return nil, nil
	}
	return g.unary, g.stream
}

// Init creates the series of code OK for every method s serves, so that
// they exist (at zero) before the first call: a dashboard's rate() and an
// alert on absence then work from the start. Call it after registering
// the services. Nil g does nothing.
func (g *GRPC) Init(s *grpc.Server) {
	if g == nil {
		return
	}
	for svc, info := range s.GetServiceInfo() {
		for _, m := range info.Methods {
			g.method("/"+svc+"/"+m.Name).of(g, codes.OK)
		}
	}
}

func (g *GRPC) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := handler(ctx, req)
	g.done(info.FullMethod, start, err)
	return resp, err
}

func (g *GRPC) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	start := time.Now()
	err := handler(srv, ss)
	g.done(info.FullMethod, start, err)
	return err
}

func (g *GRPC) done(fullMethod string, start time.Time, err error) {
	code := codes.OK
	if err != nil {
		code = status.Code(err)
	}
	o := g.method(fullMethod).of(g, code)
	o.handled.Inc()
	o.seconds.Observe(time.Since(start).Seconds())
}

// method returns the observers of fullMethod ("/pkg.Service/Method"),
// creating them on first use. Method names come from the server's own
// service descriptions (gRPC rejects unknown ones before interceptors
// run), so the set is bounded.
func (g *GRPC) method(fullMethod string) *methodObservers {
	if v, ok := g.methods.Load(fullMethod); ok {
		return v.(*methodObservers)
	}
	svc, m := splitMethod(fullMethod)
	v, _ := g.methods.LoadOrStore(fullMethod, &methodObservers{service: svc, method: m})
	return v.(*methodObservers)
}

// of returns the observers of code, creating them on first use.
func (m *methodObservers) of(g *GRPC, code codes.Code) *codeObservers {
	c := int(code)
	if c < 0 || c >= numCodes {
		c = int(codes.Unknown)
		code = codes.Unknown
	}
	if o := m.byCode[c].Load(); o != nil {
		return o
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o := m.byCode[c].Load()
	if o == nil {
		lv := []string{m.service, m.method, code.String()}
		o = &codeObservers{handled: g.handled.WithLabelValues(lv...), seconds: g.seconds.WithLabelValues(lv...)}
		m.byCode[c].Store(o)
	}
	return o
}

// splitMethod turns "/tabula.Master/CreateTable" into its service and
// method.
func splitMethod(full string) (service, method string) {
	full = strings.TrimPrefix(full, "/")
	if i := strings.LastIndexByte(full, '/'); i >= 0 {
		return full[:i], full[i+1:]
	}
	return "unknown", full
}
