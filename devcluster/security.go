package devcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tabuladb/tabula/auth"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/tlsconf"
)

// AdminName is the principal of the dev cluster's first admin: the common
// name of its client certificate and the owner of its token.
const AdminName = tlsconf.AdminName

// security holds the dev cluster's certificates and TLS configurations;
// its zero value is a plaintext cluster.
type security struct {
	pki    tlsconf.DevPKI
	master struct{ server, dial, etcd *tls.Config }
	server struct{ server, etcd *tls.Config }
	client *tls.Config // trusts the CA, presents no certificate
	// gateway: dial presents the gateway identity's certificate (nil for
	// a plaintext cluster); server is the gateway's port's with
	// Config.GatewayTLS, else nil.
	gateway struct{ dial, server *tls.Config }
	token   string
	tokenF  string
}

func newSecurity(cfg Config) (security, error) {
	var s security
	if !cfg.TLS && !cfg.Auth && !cfg.GatewayTLS {
		return s, nil
	}
	var err error
	s.tokenF = filepath.Join(cfg.Dir, "admin.token")
	if s.pki, err = tlsconf.GenerateDev(filepath.Join(cfg.Dir, "tls")); err != nil {
		return s, fmt.Errorf("devcluster: making the dev CA: %w", err)
	}
	for _, c := range []struct {
		dst   **tls.Config
		files tlsconf.Files
		mk    func(tlsconf.Files) (*tls.Config, error)
	}{
		{&s.master.server, s.pki.Master, tlsconf.ServerConfig},
		{&s.master.dial, s.pki.Master, tlsconf.ClientConfig},
		{&s.master.etcd, s.pki.Master, tlsconf.ClientConfig},
		{&s.server.server, s.pki.TabletServer, tlsconf.ServerConfig},
		{&s.server.etcd, s.pki.TabletServer, tlsconf.ClientConfig},
		{&s.client, tlsconf.Files{CA: s.pki.CA}, tlsconf.ClientConfig},
		{&s.gateway.dial, s.pki.Gateway, tlsconf.ClientConfig},
	} {
		if *c.dst, err = c.mk(c.files); err != nil {
			return s, fmt.Errorf("devcluster: %w", err)
		}
	}
	if cfg.GatewayTLS {
		if s.gateway.server, err = tlsconf.ServerConfig(s.pki.Gateway); err != nil {
			return s, fmt.Errorf("devcluster: %w", err)
		}
	}
	return s, nil
}

// bootstrap gives AdminName the admin role on "*" and a token, kept in
// Dir/admin.token (0600) and reused while etcd still knows it.
func (s *security) bootstrap(ctx context.Context, cfg Config, endpoints []string) error {
	if !cfg.Auth {
		return nil
	}
	cli, err := meta.NewClient(ctx, endpoints, s.master.etcd)
	if err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	defer cli.Close()
	l := meta.NewLayout(cfg.Cluster)
	bctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := auth.SetGrant(bctx, cli, l, auth.Grant{Principal: AdminName, Table: auth.AllTables, Role: auth.Admin}); err != nil {
		return fmt.Errorf("devcluster: granting %s the admin role: %w", AdminName, err)
	}
	if b, err := os.ReadFile(s.tokenF); err == nil {
		tok := strings.TrimSpace(string(b))
		known, err := auth.ListTokens(bctx, cli, l, AdminName)
		if err != nil {
			return fmt.Errorf("devcluster: %w", err)
		}
		for _, k := range known {
			if strings.HasPrefix(tok, "tabula_"+k.ID+"_") {
				s.token = tok
				return nil
			}
		}
	}
	tok, _, err := auth.CreateToken(bctx, cli, l, AdminName, "dev cluster admin", time.Now())
	if err != nil {
		return fmt.Errorf("devcluster: creating the admin token: %w", err)
	}
	if err := os.WriteFile(s.tokenF, []byte(tok+"\n"), 0o600); err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	s.token = tok
	return nil
}

// ClientTLS returns a TLS configuration that trusts the dev CA and
// presents no certificate (pair it with AdminToken), or nil for a
// plaintext cluster.
func (c *Cluster) ClientTLS() *tls.Config { return c.sec.client }

// PKI returns the dev CA's files (empty for a plaintext cluster): its
// Admin files are a client certificate for AdminName, and its Issue
// signs one for any principal.
func (c *Cluster) PKI() tlsconf.DevPKI { return c.sec.pki }

// AdminToken returns the admin's token ("" without Auth).
func (c *Cluster) AdminToken() string { return c.sec.token }

// AdminTokenFile returns the file holding AdminToken ("" without Auth).
func (c *Cluster) AdminTokenFile() string {
	if c.sec.token == "" {
		return ""
	}
	return c.sec.tokenF
}
