package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `tabula health` exits 0 once the dev process's /readyz answers 200,
// 0 for --live, and 1 with the reason for an address that serves nothing.
func TestHealthCommand(t *testing.T) {
	devCluster(t)
	var addr string
	deadline := time.Now().Add(30 * time.Second)
	for addr == "" && time.Now().Before(deadline) {
		if b, err := os.ReadFile(filepath.Join(dev.dir, "http.addr")); err == nil {
			addr = string(bytes.TrimSpace(b))
		} else {
			time.Sleep(20 * time.Millisecond) // waiting for the file, not synchronising
		}
	}
	if addr == "" {
		t.Fatal("tabula dev wrote no http.addr")
	}
	if r := tabula(t, "health", "--http", addr, "--live"); r.code != 0 {
		t.Fatalf("health --live: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	var r result
	for time.Now().Before(deadline.Add(30 * time.Second)) {
		if r = tabula(t, "health", "--http", addr); r.code == 0 {
			break
		}
	}
	if r.code != 0 {
		t.Fatalf("health of the dev cluster never passed: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	r = tabula(t, "health", "--http", "127.0.0.1:1", "--wait", "2s")
	if r.code != 1 || !strings.Contains(r.stderr, "127.0.0.1:1") {
		t.Fatalf("health of nothing: exit %d, stderr %q; want 1 naming the address", r.code, r.stderr)
	}
}
