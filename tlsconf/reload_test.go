package tlsconf

import (
	"testing"
	"time"
)

func TestServerReloadsARewrittenCertificate(t *testing.T) {
	p := devPKI(t)
	clk := newFakeClock()
	srv, err := serverConfig(p.Master, clk.now)
	if err != nil {
		t.Fatal(err)
	}
	cli := mustClient(t, p.Admin)
	serverName := func() string {
		t.Helper()
		r := handshake(t, srv, cli)
		if r.serverErr != nil || r.clientErr != nil {
			t.Fatalf("server: %v, client: %v", r.serverErr, r.clientErr)
		}
		return r.client.PeerCertificates[0].Subject.CommonName
	}
	mtime := time.Unix(2_000_000_000, 0)
	rotate := func(to Files) {
		t.Helper()
		mtime = mtime.Add(time.Minute)
		replaceFile(t, p.Master.Cert, readFile(t, to.Cert), mtime)
		replaceFile(t, p.Master.Key, readFile(t, to.Key), mtime)
	}

	if got := serverName(); got != MasterName {
		t.Fatalf("server presents %q, want %q", got, MasterName)
	}
	rotate(p.TabletServer)
	if got := serverName(); got != MasterName {
		t.Errorf("before a check was due: server presents %q, want the old %q", got, MasterName)
	}
	clk.advance(reloadInterval - time.Nanosecond)
	if got := serverName(); got != MasterName {
		t.Errorf("just before a check was due: server presents %q, want the old %q", got, MasterName)
	}
	clk.advance(time.Nanosecond)
	if got := serverName(); got != TabletServerName {
		t.Errorf("after the check: server presents %q, want the new %q", got, TabletServerName)
	}

	// A broken rewrite keeps the last good certificate, and is retried.
	mtime = mtime.Add(time.Minute)
	replaceFile(t, p.Master.Cert, []byte("not a certificate"), mtime)
	clk.advance(reloadInterval)
	if got := serverName(); got != TabletServerName {
		t.Errorf("after a broken rewrite: server presents %q, want the last good %q", got, TabletServerName)
	}
	rotate(p.Etcd)
	clk.advance(reloadInterval)
	if got := serverName(); got != EtcdName {
		t.Errorf("after a repaired rewrite: server presents %q, want %q", got, EtcdName)
	}
}

func TestClientReloadsARewrittenCertificate(t *testing.T) {
	p := devPKI(t)
	clk := newFakeClock()
	cli, err := clientConfig(p.Admin, clk.now)
	if err != nil {
		t.Fatal(err)
	}
	srv := mustServer(t, p.Master)
	clientName := func() string {
		t.Helper()
		r := handshake(t, srv, cli)
		if r.serverErr != nil || r.clientErr != nil {
			t.Fatalf("server: %v, client: %v", r.serverErr, r.clientErr)
		}
		name, _ := PeerName(r.server)
		return name
	}
	if got := clientName(); got != AdminName {
		t.Fatalf("client presents %q, want %q", got, AdminName)
	}
	mtime := time.Unix(2_000_000_000, 0)
	replaceFile(t, p.Admin.Cert, readFile(t, p.TabletServer.Cert), mtime)
	replaceFile(t, p.Admin.Key, readFile(t, p.TabletServer.Key), mtime)
	clk.advance(reloadInterval)
	if got := clientName(); got != TabletServerName {
		t.Errorf("after the check: client presents %q, want %q", got, TabletServerName)
	}
}
