package gateway

import (
	"context"
	"crypto/tls"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	btapb "cloud.google.com/go/bigtable/admin/apiv2/adminpb"
	btpb "cloud.google.com/go/bigtable/apiv2/bigtablepb"
	"cloud.google.com/go/longrunning/autogen/longrunningpb"

	"github.com/tabuladb/tabula/client"
)

// Options configure a Server. The zero value is ready to use.
type Options struct {
	// ChunkBytes is the size of the values of one ReadRows response
	// message and of one chunk of a value: a larger value is sent across
	// several chunks, and a larger row across several messages (unless
	// WholeRows), as the protocol allows. The default is 1 MiB.
	ChunkBytes int
	// WholeRows tells from a ReadRows caller's gRPC user agent whether it
	// reads only whole rows per message, so that a row larger than
	// ChunkBytes must go in one message (docs/GATEWAY.md "Large values").
	// The default is WholeRowsForGo.
	WholeRows func(userAgent string) bool
	// InstanceID is the instance of the default namespace: ListInstances
	// reports it first, and it always maps to the default namespace
	// (namespaces.go). The default is "tabula".
	InstanceID string
	// Instances says what an instance that is neither InstanceID,
	// "default" nor an existing namespace is: the default namespace
	// (InstancesAny), or NOT_FOUND (InstancesNamespaces, as Cloud
	// Bigtable answers an instance never created), namespaces.go. The
	// default is InstancesAny.
	Instances InstanceMode
	// ClusterID is the cluster id the instance admin API reports for every
	// instance. The default is "tabula".
	ClusterID string
	// Zone is the location the instance admin API reports. The default is
	// "local".
	Zone string
	// CallerAuth runs every call as its caller: the call must carry a
	// Tabula token ("authorization: Bearer <token>"), which the gateway's
	// client presents instead of its own credentials, so the cluster's
	// servers check that caller's roles exactly as for the native API; a
	// call without one is refused with UNAUTHENTICATED (callers.go,
	// docs/GATEWAY.md "Security"). Turn it on whenever the cluster
	// requires authentication, and give the gateway's client no
	// credentials of its own beyond TLS. Only Start installs it; an
	// embedder of Register adds the interceptors of
	// Options.ServerOptions. The default is off: every call acts with the
	// gateway client's credentials, as the emulator asks for none.
	//
	// With TLS, a caller may present a client certificate instead: the
	// gateway's client then asserts its common name to the cluster
	// (client.WithActingFor), which the servers accept only when that
	// client's own certificate is the gateway identity (common name
	// tabula-gateway) and it has no token of its own.
	CallerAuth bool
	// TLS, when set, makes Start serve TLS with it instead of plaintext:
	// a server certificate, and, to take callers' client certificates,
	// ClientCAs (the cluster's CA) with ClientAuth
	// tls.VerifyClientCertIfGiven, as tlsconf.ServerConfig makes it.
	// Only Start uses it. The default is nil: plaintext, as the emulator
	// and its clients speak.
	TLS *tls.Config
	// SampleBytes is how finely SampleRowKeys cuts each tablet: a sample
	// about every SampleBytes of its data (client.SampleTargetBytes). The
	// default is 0: the tablet servers' default, 256 MiB, about Cloud
	// Bigtable's granularity (docs/GATEWAY.md "SampleRowKeys").
	SampleBytes int64
	// Metrics, when set, receives the gateway's Prometheus series: its
	// gRPC calls by method and code (docs/OPERATIONS.md "Metrics"),
	// unregistered by Process.Close. The default is nil: none, and no
	// interceptors. Only Start uses it.
	Metrics prometheus.Registerer
}

func (o Options) withDefaults() Options {
	if o.ChunkBytes <= 0 {
		o.ChunkBytes = 1 << 20
	}
	if o.WholeRows == nil {
		o.WholeRows = WholeRowsForGo
	}
	if o.InstanceID == "" {
		o.InstanceID = "tabula"
	}
	if o.ClusterID == "" {
		o.ClusterID = "tabula"
	}
	if o.Zone == "" {
		o.Zone = "local"
	}
	return o
}

// Server answers the Cloud Bigtable API with a Tabula client. It is safe
// for concurrent use and holds no state but the client's caches and the
// operations it returned (operations.go).
type Server struct {
	c    *client.Client
	opts Options
	// wire: ReadRows answers are written as bytes (wireSink), which only
	// a gRPC server with convert.Codec sends; Start's has it.
	wire bool

	data     dataServer
	admin    adminServer
	instance instanceServer
	// ns maps instances to namespaces (namespaces.go).
	ns *namespaces
	// ops are the operations it returned, for GetOperation.
	ops operations
}

// New returns a Server that serves the cluster c talks to. The caller
// keeps ownership of c.
func New(c *client.Client, opts Options) *Server {
	s := &Server{c: c, opts: opts.withDefaults()}
	s.ns = &namespaces{defaultID: s.opts.InstanceID, strict: s.opts.Instances == InstancesNamespaces,
		list: s.listNamespaces, now: time.Now, missWait: anyMissWait}
	s.data = dataServer{s: s}
	s.admin = adminServer{s: s}
	s.instance = instanceServer{s: s}
	return s
}

// Register registers the data, table admin, instance admin and
// long-running operations services on g. On a server of one's own, ReadRows answers are protos for gRPC's
// codec; Start's server has convert.Codec and is sent their bytes as
// written (wire.go), which costs less.
func (s *Server) Register(g *grpc.Server) {
	btpb.RegisterBigtableServer(g, &s.data)
	btapb.RegisterBigtableTableAdminServer(g, &s.admin)
	btapb.RegisterBigtableInstanceAdminServer(g, &s.instance)
	longrunningpb.RegisterOperationsServer(g, &s.ops)
}

// table returns the client handle of the table a resource name names.
func (s *Server) table(ctx context.Context, field, name string) (*client.Table, tableName, error) {
	n, err := s.parseTable(ctx, field, name)
	if err != nil {
		return nil, n, err
	}
	return s.c.Open(n.table), n, nil
}

// ping checks the cluster answers: the cheapest admin call.
func (s *Server) ping(ctx context.Context) error {
	_, err := s.c.Admin().ListTables(ctx)
	return toStatus(err)
}
