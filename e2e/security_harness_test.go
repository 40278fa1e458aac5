package e2e

import (
	"context"
	"crypto/tls"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tabuladb/tabula/auth"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/tlsconf"
)

// clusterSecurity is a secured test cluster's certificates and admin
// token. Its methods work on a nil receiver: a plaintext cluster.
type clusterSecurity struct {
	pki   tlsconf.DevPKI
	token string // the admin's (tabula-admin, admin on "*")
}

func newClusterSecurity(t *testing.T, dir string) *clusterSecurity {
	t.Helper()
	pki, err := tlsconf.GenerateDev(filepath.Join(dir, "tls"))
	if err != nil {
		t.Fatalf("making the test CA: %v", err)
	}
	return &clusterSecurity{pki: pki}
}

func (s *clusterSecurity) etcdFiles() tlsconf.Files {
	if s == nil {
		return tlsconf.Files{}
	}
	return s.pki.Etcd
}

func (s *clusterSecurity) master() tlsconf.Files {
	if s == nil {
		return tlsconf.Files{}
	}
	return s.pki.Master
}

func (s *clusterSecurity) tabletServer() tlsconf.Files {
	if s == nil {
		return tlsconf.Files{}
	}
	return s.pki.TabletServer
}

// processArgs are a master's or tablet server's security flags.
func (s *clusterSecurity) processArgs(f tlsconf.Files) []string {
	if s == nil {
		return nil
	}
	return []string{"--tls-ca", f.CA, "--tls-cert", f.Cert, "--tls-key", f.Key,
		"--etcd-ca", f.CA, "--etcd-cert", f.Cert, "--etcd-key", f.Key, "--auth"}
}

// etcdClientTLS is the test's own etcd client configuration (the
// master's certificate).
func (s *clusterSecurity) etcdClientTLS(t *testing.T) *tls.Config {
	if s == nil {
		return nil
	}
	cfg, err := tlsconf.ClientConfig(s.pki.Master)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// clientTLS trusts the test CA and presents no certificate.
func (s *clusterSecurity) clientTLS(t *testing.T) *tls.Config {
	cfg, err := tlsconf.ClientConfig(tlsconf.Files{CA: s.pki.CA})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// bootstrap gives tabula-admin the admin role on "*" and a token, as
// `tabula auth bootstrap` does.
func (s *clusterSecurity) bootstrap(t *testing.T, c *cluster) {
	if s == nil {
		return
	}
	t.Helper()
	cli := c.etcdClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	l := meta.NewLayout(clusterKey)
	if err := auth.SetGrant(ctx, cli, l, auth.Grant{Principal: tlsconf.AdminName, Table: auth.AllTables, Role: auth.Admin}); err != nil {
		t.Fatalf("granting the admin: %v", err)
	}
	tok, _, err := auth.CreateToken(ctx, cli, l, tlsconf.AdminName, "e2e admin", time.Now())
	if err != nil {
		t.Fatalf("creating the admin token: %v", err)
	}
	s.token = tok
}

// clientOptions are the options of a client of the cluster: the admin's
// token over TLS on a secured cluster.
func (s *clusterSecurity) clientOptions(masters []string) client.Options {
	o := client.Options{Masters: masters}
	if s == nil {
		return o
	}
	cfg, err := tlsconf.ClientConfig(tlsconf.Files{CA: s.pki.CA})
	if err != nil {
		panic(err) // the CA was written and loaded when the cluster started
	}
	o.TLS, o.Token = cfg, s.token
	return o
}

// dialOptions are what a raw gRPC connection to a process needs: TLS
// and the admin's token on a secured cluster.
func (s *clusterSecurity) dialOptions(t *testing.T) []grpc.DialOption {
	if s == nil {
		return []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	return []grpc.DialOption{
		grpc.WithTransportCredentials(credentials.NewTLS(s.clientTLS(t))),
		grpc.WithPerRPCCredentials(tokenCreds(s.token)),
	}
}

// tokenCreds sends a bearer token.
type tokenCreds string

func (tc tokenCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(tc)}, nil
}

func (tokenCreds) RequireTransportSecurity() bool { return true }
