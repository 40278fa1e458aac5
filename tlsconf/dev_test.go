package tlsconf

import (
	"bytes"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// snapshot reads every file in dir.
func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, e := range ents {
		m[e.Name()] = readFile(t, filepath.Join(dir, e.Name()))
	}
	return m
}

func sameFiles(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func TestGenerateDevWritesThePKI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	p, err := GenerateDev(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ca.pem", "ca-key.pem"}
	for _, n := range []string{MasterName, TabletServerName, EtcdName, AdminName, GatewayName} {
		want = append(want, n+".pem", n+"-key.pem")
	}
	got := snapshot(t, dir)
	if len(got) != len(want) {
		t.Errorf("files %v, want %v", len(got), want)
	}
	for _, n := range want {
		if _, ok := got[n]; !ok {
			t.Errorf("%s missing", n)
		}
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("dir: %v %v, want mode 0700", fi.Mode(), err)
	}
	for _, k := range []string{filepath.Join(dir, "ca-key.pem"), p.Master.Key, p.TabletServer.Key, p.Etcd.Key, p.Admin.Key, p.Gateway.Key} {
		if fi, err := os.Stat(k); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want mode 0600", k, fi.Mode(), err)
		}
	}
	for _, id := range p.identities() {
		if id.files.CA != p.CA {
			t.Errorf("%s: CA %q, want %q", id.name, id.files.CA, p.CA)
		}
		c, err := readCert(id.files.Cert)
		if err != nil {
			t.Fatal(err)
		}
		if c.Subject.CommonName != id.name {
			t.Errorf("%s: common name %q", id.files.Cert, c.Subject.CommonName)
		}
	}
}

func TestGenerateDevReusesValidFiles(t *testing.T) {
	dir := t.TempDir()
	if _, err := GenerateDev(dir); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	if _, err := GenerateDev(dir); err != nil {
		t.Fatal(err)
	}
	if !sameFiles(before, snapshot(t, dir)) {
		t.Error("second GenerateDev rewrote valid files")
	}
}

func TestGenerateDevRegeneratesWhenAFileIsMissing(t *testing.T) {
	dir := t.TempDir()
	p, err := GenerateDev(dir)
	if err != nil {
		t.Fatal(err)
	}
	oldCA := readFile(t, p.CA)
	if err := os.Remove(p.Admin.Key); err != nil {
		t.Fatal(err)
	}
	if p, err = GenerateDev(dir); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(oldCA, readFile(t, p.CA)) {
		t.Error("the CA was kept; want a new PKI")
	}
	r := handshake(t, mustServer(t, p.Master), mustClient(t, p.Admin))
	if name, ok := PeerName(r.server); r.serverErr != nil || r.clientErr != nil || name != AdminName || !ok {
		t.Errorf("after regenerating: server %v, client %v, PeerName %q %v", r.serverErr, r.clientErr, name, ok)
	}
}

func TestGenerateDevRegeneratesBeforeExpiry(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Now()
	p, err := generateDev(dir, t0)
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	leaf, err := readCert(p.Master.Cert)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := generateDev(dir, leaf.NotAfter.Add(-minRemaining-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if !sameFiles(before, snapshot(t, dir)) {
		t.Error("regenerated certificates valid for 25 more hours")
	}
	if _, err := generateDev(dir, leaf.NotAfter.Add(-minRemaining+time.Hour)); err != nil {
		t.Fatal(err)
	}
	if sameFiles(before, snapshot(t, dir)) {
		t.Error("kept certificates valid for only 23 more hours")
	}
}

// TestIssueSignsAClientCertificate: Issue makes a certificate for a
// principal that the dev CA verifies for client authentication, with the
// principal as its common name, and refuses the cluster's own names.
func TestIssueSignsAClientCertificate(t *testing.T) {
	p, err := GenerateDev(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f, err := p.Issue("reader")
	if err != nil {
		t.Fatal(err)
	}
	c, err := readCert(f.Cert)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := readCert(p.CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	if _, err := c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("the dev CA does not verify the issued certificate: %v", err)
	}
	if c.Subject.CommonName != "reader" || f.CA != p.CA {
		t.Fatalf("common name %q, files %+v", c.Subject.CommonName, f)
	}
	if fi, err := os.Stat(f.Key); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key %v %v, want mode 0600", fi.Mode(), err)
	}
	for _, bad := range []string{GatewayName, MasterName, "", "../x", "ca"} {
		if _, err := p.Issue(bad); err == nil {
			t.Errorf("Issue(%q) succeeded", bad)
		}
	}
}
