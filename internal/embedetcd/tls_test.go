package embedetcd

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/tlsconf"
)

func TestTLSWantsAClientCertificate(t *testing.T) {
	pki, err := tlsconf.GenerateDev(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	srv, err := Start(ctx, Config{Dir: t.TempDir(), NoFsync: true, TLS: pki.Etcd})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	tlsCfg, err := tlsconf.ClientConfig(pki.Master)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := meta.NewClient(ctx, srv.Endpoints(), tlsCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatalf("put with a client certificate: %v", err)
	}
	resp, err := cli.Get(ctx, "k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("get with a client certificate: %v %v", resp, err)
	}

	// A client that trusts the server but has no certificate of its own
	// is turned away. The timeout bounds the test; a refused client
	// retries until it runs out.
	anonCfg, err := tlsconf.ClientConfig(tlsconf.Files{CA: pki.CA})
	if err != nil {
		t.Fatal(err)
	}
	anon, err := meta.NewClient(ctx, srv.Endpoints(), anonCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	tctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := anon.Put(tctx, "k", "anonymous"); err == nil {
		t.Fatal("put without a client certificate succeeded")
	}
	// The Put above only says the client never got through; this says why.
	conn, err := tls.Dial("tcp", srv.Endpoints()[0], anonCfg)
	if err == nil {
		_, err = conn.Read(make([]byte, 1))
		conn.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "certificate required") {
		t.Errorf("TLS without a client certificate: %v, want the server to require one", err)
	}
}

func TestTLSConfigMustBeComplete(t *testing.T) {
	_, err := Start(context.Background(), Config{Dir: t.TempDir(), TLS: tlsconf.Files{CA: "ca.pem"}})
	if err == nil {
		t.Fatal("Start with a CA but no certificate succeeded")
	}
}
