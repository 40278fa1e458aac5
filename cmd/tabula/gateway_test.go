package main

import (
	"crypto/tls"
	"testing"

	"github.com/spf13/viper"

	"github.com/tabuladb/tabula/tlsconf"
)

// TestGatewayServeTLS: --serve-tls serves the --tls-* files as a server's
// (the caller's certificate verified if given), and is refused without a
// certificate and key to serve.
func TestGatewayServeTLS(t *testing.T) {
	v := viper.New()
	if cfg, err := gatewayServeTLS(v); cfg != nil || err != nil {
		t.Fatalf("without --serve-tls: %v, %v; want plaintext", cfg, err)
	}
	pki, err := tlsconf.GenerateDev(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	v.Set("serve-tls", true)
	v.Set("tls-ca", pki.CA)
	if _, err := gatewayServeTLS(v); err == nil {
		t.Fatal("--serve-tls with only --tls-ca: accepted")
	}
	v.Set("tls-cert", pki.Gateway.Cert)
	v.Set("tls-key", pki.Gateway.Key)
	cfg, err := gatewayServeTLS(v)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ClientAuth != tls.VerifyClientCertIfGiven || cfg.ClientCAs == nil {
		t.Fatalf("client certificates: %v, CAs %v; want verified if given", cfg.ClientAuth, cfg.ClientCAs)
	}
}
