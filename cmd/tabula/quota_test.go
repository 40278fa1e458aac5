package main

import (
	"context"
	"strings"
	"testing"

	"github.com/tabuladb/tabula/internal/embedetcd"
)

// tabula quota set, list and remove write and read the quota records of
// etcd (docs/OPERATIONS.md "Quotas"), and refuse what is not a quota.
func TestQuotaSetListRemove(t *testing.T) {
	client, err := embedetcd.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	peer, err := embedetcd.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	etcd, err := embedetcd.Start(context.Background(), embedetcd.Config{Dir: t.TempDir(), ClientAddr: client, PeerAddr: peer, NoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	at := "--etcd=" + etcd.Endpoints()[0]
	run := func(args ...string) result { return tabulaEnv(t, nil, append(args, at)...) }
	if r := run("quota", "set", "principal", "batch", "--write-requests", "500", "--write-bytes", "10MiB"); r.code != 0 {
		t.Fatalf("quota set: %+v", r)
	}
	if r := run("quota", "set", "namespace", "analytics", "--space", "1GiB"); r.code != 0 {
		t.Fatalf("quota set --space: %+v", r)
	}
	r := run("quota", "list", "-o", "json")
	if r.code != 0 || !strings.Contains(r.stdout, `"name":"batch"`) || !strings.Contains(r.stdout, `"write_bytes":10485760`) ||
		!strings.Contains(r.stdout, `"space_bytes":1073741824`) {
		t.Fatalf("quota list: %+v", r)
	}
	for _, bad := range [][]string{
		{"quota", "set", "user", "x", "--read-requests", "1"},     // no such scope
		{"quota", "set", "table", "t"},                            // no limit
		{"quota", "set", "principal", "p", "--space", "1GiB"},     // space is not a principal's
		{"quota", "set", "table", "t", "--read-requests", "fast"}, // not a rate
	} {
		if r := run(bad...); r.code != 2 {
			t.Errorf("tabula %s: exit %d, want 2 (usage); %s", strings.Join(bad, " "), r.code, r.stderr)
		}
	}
	if r := run("quota", "remove", "principal", "batch"); r.code != 0 {
		t.Fatalf("quota remove: %+v", r)
	}
	if r := run("quota", "remove", "principal", "batch"); r.code == 0 {
		t.Fatalf("removing a quota twice succeeded: %+v", r)
	}
	if r := run("quota", "list"); r.code != 0 || strings.Contains(r.stdout, "batch") || !strings.Contains(r.stdout, "analytics") {
		t.Fatalf("quota list after remove: %+v", r)
	}
}
