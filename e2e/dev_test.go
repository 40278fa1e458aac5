package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/tlsconf"
)

// devProc runs `tabula dev` on a data directory.
type devProc struct {
	proc
	data  string
	extra []string // more flags for tabula dev
}

// newDevProc prepares `tabula dev` on a fresh data directory; the test's
// end kills it, checks its log and shows its tail if the test failed.
func newDevProc(t *testing.T) *devProc {
	dir := t.TempDir()
	d := &devProc{proc: proc{name: "dev", log: filepath.Join(dir, "dev.log")}, data: filepath.Join(dir, "data")}
	t.Cleanup(func() {
		d.kill()
		d.checkLog(t)
		if t.Failed() {
			t.Logf("---- log of tabula dev ----\n%s", d.tail(200))
		}
	})
	return d
}

// startDev starts the dev cluster and returns its master address, read
// from DATA/master.addr (removed first: it survives restarts).
func (d *devProc) startDev(t *testing.T) string {
	t.Helper()
	addrFile := filepath.Join(d.data, "master.addr")
	if err := os.Remove(addrFile); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	d.args = []string{"dev", "--servers", "2", "--data", d.data,
		"--master-addr", "127.0.0.1:0", "--lease-ttl", ttlFlag, "--log-level", "info", "--http", "127.0.0.1:0"}
	if secureAll() {
		d.args = append(d.args, "--auth")
	} else {
		d.args = append(d.args, "--gateway", "127.0.0.1:0") // a free port, not the default
	}
	d.args = append(d.args, d.extra...)
	d.start(t)
	deadline := time.Now().Add(readyWait)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(addrFile); err == nil && len(bytes.TrimSpace(b)) > 0 {
			d.addr = string(bytes.TrimSpace(b))
			return d.addr
		}
		if !d.running() {
			t.Fatalf("tabula dev exited while starting: %v\n%s", d.waitErr, d.tail(60))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("tabula dev wrote no %s within %v\n%s", addrFile, readyWait, d.tail(60))
	return ""
}

// gatewayAddr is the address of the dev cluster's Bigtable gateway, read
// from DATA/gateway.addr.
func (d *devProc) gatewayAddr(t *testing.T) string {
	t.Helper()
	gw, err := os.ReadFile(filepath.Join(d.data, "gateway.addr"))
	if err != nil {
		t.Fatalf("tabula dev wrote no gateway.addr: %v", err)
	}
	return string(bytes.TrimSpace(gw))
}

// devClient connects to the dev cluster at addr (with `tabula dev
// --auth`'s CA and admin token under secureAll); the caller closes it.
func (d *devProc) devClient(t *testing.T, addr string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	o := client.Options{Masters: []string{addr}}
	if secureAll() {
		tok, err := os.ReadFile(filepath.Join(d.data, "admin.token"))
		if err != nil {
			t.Fatal(err)
		}
		if o.TLS, err = tlsconf.ClientConfig(tlsconf.Files{CA: filepath.Join(d.data, "tls", "ca.pem")}); err != nil {
			t.Fatal(err)
		}
		o.Token = string(bytes.TrimSpace(tok))
	}
	cl, err := client.NewClientWithOptions(ctx, o)
	if err != nil {
		t.Fatalf("client.NewClient(%s): %v", addr, err)
	}
	return cl
}

// writeDevRows writes rows "<prefix>-000"… with the load's two cells each.
func writeDevRows(t *testing.T, tbl *client.Table, prefix string, n int) []string {
	t.Helper()
	var rows []string
	for i := range n {
		// Spread over both tablets (split at "m").
		row := fmt.Sprintf("%c-%s-%03d", "cx"[i%2], prefix, i)
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		err := tbl.Apply(ctx, []byte(row), rowMutation(row))
		cancel()
		if err != nil {
			t.Fatalf("Apply(%q): %v", row, err)
		}
		rows = append(rows, row)
	}
	return rows
}

// checkDevRows checks that the table holds exactly the given rows.
func checkDevRows(t *testing.T, tbl *client.Table, want []string) {
	t.Helper()
	got := scanAll(t, tbl)
	wantSet := map[string]bool{}
	for _, r := range want {
		wantSet[r] = true
	}
	seen := map[string]bool{}
	for _, r := range got {
		row := string(r.Key)
		seen[row] = true
		if !wantSet[row] {
			t.Errorf("row %q was never written", row)
		} else if err := checkLoadRow(row, r.Cells); err != nil {
			t.Error(err)
		}
	}
	for _, r := range want {
		if !seen[r] {
			t.Errorf("row %q was lost", r)
		}
	}
	t.Logf("read back %d rows, want %d", len(got), len(want))
}

// TestDevClusterRestartKeepsData: `tabula dev` keeps every acknowledged
// write across a clean restart (SIGTERM) and a crash (kill -9 of the whole
// dev process: etcd, master and tablet servers at once) on the same data
// directory.
func TestDevClusterRestartKeepsData(t *testing.T) {
	slow(t)
	d := newDevProc(t)
	const table = "keep"

	// First run: create the table and write.
	addr := d.startDev(t)
	cl := d.devClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	err := cl.Admin().CreateTable(ctx, table, []families.Family{families.Default(famA), families.Default(famB)}, [][]byte{[]byte("m")})
	cancel()
	if err != nil {
		cl.Close()
		t.Fatalf("creating %s: %v", table, err)
	}
	waitServing(t, cl, table)
	want := writeDevRows(t, cl.Open(table), "one", 100)
	cl.Close()

	// Clean restart.
	if err := d.stop(); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, d.tail(60))
	}
	addr = d.startDev(t)
	cl = d.devClient(t, addr)
	waitServing(t, cl, table)
	checkDevRows(t, cl.Open(table), want)
	want = append(want, writeDevRows(t, cl.Open(table), "two", 100)...)
	cl.Close()

	// Crash restart: every acknowledged write is in a commit log.
	d.kill()
	addr = d.startDev(t)
	cl = d.devClient(t, addr)
	defer cl.Close()
	waitServing(t, cl, table)
	checkDevRows(t, cl.Open(table), want)

	if err := d.stop(); err != nil {
		t.Errorf("final SIGTERM: %v", err)
	}
}

// waitServing waits until every tablet of table is assigned to a server
// that is registered now, at the address it registered with (after a
// restart the tablet map may still name the previous run's addresses).
func waitServing(t *testing.T, cl *client.Client, table string) {
	t.Helper()
	deadline := time.Now().Add(readyWait)
	var last []client.TabletInfo
	var lastErr error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ss, err := cl.Admin().Servers(ctx)
		var ts []client.TabletInfo
		if err == nil {
			ts, err = cl.Admin().Tablets(ctx, table)
		}
		cancel()
		last, lastErr = ts, err
		if err == nil && len(ts) > 0 {
			addrs := map[string]string{}
			for _, s := range ss {
				addrs[s.ID] = s.Address
			}
			ok := true
			for _, tb := range ts {
				if tb.State == "unassigned" || tb.Server == "" || addrs[tb.Server] != tb.Address {
					ok = false
				}
			}
			if ok {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("tablets of %s not served by registered servers within %v (last error %v):\n%s", table, readyWait, lastErr, formatTablets(last))
}
