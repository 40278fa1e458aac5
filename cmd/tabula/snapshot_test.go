package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// tabula snapshot create, list, describe and delete go through the
// master's Snapshots service (docs/OPERATIONS.md "Snapshots"). The names
// are this test's own: the dev cluster is shared. In the secure pass
// (TABULA_TEST_SECURE=1) a token with only the write role on the table is
// refused to create and delete a snapshot, and one with read lists and
// describes them.
func TestSnapshotCommands(t *testing.T) {
	ok(t, "table", "create", "snapcli", "--family", "f")
	ok(t, "put", "snapcli", "r1", "f:a=1", "--timestamp", "5")
	out := ok(t, "snapshot", "create", "snapcli", "snapcli-1")
	if !strings.Contains(out, "created snapshot snapcli-1 of table snapcli") {
		t.Fatalf("snapshot create: %s", out)
	}
	fails(t, []string{"snapshot", "create", "snapcli", "snapcli-1"}, "exists")
	fails(t, []string{"snapshot", "create", "snapcli-nosuch", "snapcli-2"}, "does not exist")
	fails(t, []string{"snapshot", "create", "snapcli", "bad/name"}, "A-Z a-z 0-9 _ . -")
	out = ok(t, "snapshot", "list", "snapcli", "-o", "json")
	if !strings.Contains(out, `"name":"snapcli-1"`) || !strings.Contains(out, `"state":"ready"`) || !strings.Contains(out, `"expires":"never"`) {
		t.Fatalf("snapshot list: %s", out)
	}
	// --expire records the time, which list and describe show.
	fails(t, []string{"snapshot", "create", "snapcli", "snapcli-exp", "--expire", "soon"}, "--expire")
	before := time.Now()
	if out := ok(t, "snapshot", "create", "snapcli", "snapcli-exp", "--expire", "7d"); !strings.Contains(out, "expiring") {
		t.Fatalf("snapshot create --expire: %s", out)
	}
	out = ok(t, "snapshot", "describe", "snapcli-exp", "-o", "json")
	var d struct{ Expires string }
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("snapshot describe: %v: %s", err, out)
	}
	exp, err := time.Parse(time.RFC3339, d.Expires)
	if err != nil || exp.Before(before.Add(7*24*time.Hour).Truncate(time.Second)) || exp.After(time.Now().Add(7*24*time.Hour)) {
		t.Fatalf("snapshot describe: expires %q (%v), want 7 days after the create", d.Expires, err)
	}
	if out := ok(t, "snapshot", "list", "snapcli"); !strings.Contains(out, d.Expires) {
		t.Fatalf("snapshot list does not show the expiry %s: %s", d.Expires, out)
	}
	ok(t, "snapshot", "delete", "snapcli-exp")
	out = ok(t, "snapshot", "describe", "snapcli-1", "-o", "json")
	if !strings.Contains(out, `"table":"snapcli"`) || strings.Contains(out, `"files":0`) || !strings.Contains(out, `"exclusive_bytes":0`) {
		t.Fatalf("snapshot describe: %s", out)
	}

	// Clone and restore.
	out = ok(t, "snapshot", "clone", "snapcli-1", "snapcli-clone")
	if !strings.Contains(out, "created table snapcli-clone from snapshot snapcli-1") {
		t.Fatalf("snapshot clone: %s", out)
	}
	if got, want := ok(t, "get", "snapcli-clone", "r1"), "r1\tf:a\t@5\t1\n"; got != want {
		t.Fatalf("the clone reads %q, want %q", got, want)
	}
	fails(t, []string{"snapshot", "clone", "snapcli-1", "snapcli-clone"}, "exists")
	// The source rewritten, split and merged: the clone reads the same.
	ok(t, "put", "snapcli", "r1", "f:a=2", "--timestamp", "6")
	ok(t, "put", "snapcli", "r2", "f:a=3", "--timestamp", "6")
	ok(t, "table", "compact", "snapcli", "--major")
	ok(t, "table", "split", "snapcli", "r2")
	ok(t, "table", "compact", "snapcli", "--major")
	ok(t, "table", "merge", "snapcli", "", "")
	ok(t, "table", "compact", "snapcli", "--major")
	if got, want := ok(t, "get", "snapcli-clone", "r1"), "r1\tf:a\t@5\t1\n"; got != want {
		t.Fatalf("after the source's compactions, split and merge the clone reads %q, want %q", got, want)
	}
	fails(t, []string{"snapshot", "restore", "snapcli-1"}, "not confirmed", "--yes")
	out = ok(t, "snapshot", "restore", "snapcli-1", "--yes")
	if !strings.Contains(out, "restored table snapcli from snapshot snapcli-1") || !strings.Contains(out, "snapshot failsafe-snapcli-1-") {
		t.Fatalf("snapshot restore: %s", out)
	}
	if got, want := ok(t, "get", "snapcli", "r1"), "r1\tf:a\t@5\t1\n"; got != want {
		t.Fatalf("the restored table reads %q, want %q", got, want)
	}
	if got := ok(t, "get", "snapcli", "r2"); got != "" {
		t.Fatalf("the restored table has a row written after the snapshot: %q", got)
	}
	// The restore deleted the table the clone came from.
	if got, want := ok(t, "get", "snapcli-clone", "r1"), "r1\tf:a\t@5\t1\n"; got != want {
		t.Fatalf("after its source's deletion the clone reads %q, want %q", got, want)
	}
	safety := strings.Fields(out[strings.Index(out, "snapshot failsafe-")+len("snapshot "):])[0]
	if out := ok(t, "snapshot", "list", "snapcli"); !strings.Contains(out, safety) {
		t.Fatalf("the safety snapshot %s is not listed: %s", safety, out)
	}

	if secureAll() {
		out := ok(t, "auth", "token", "create", "snapcli-writer")
		token := strings.TrimSpace(strings.SplitN(out, "\n", 2)[0])
		ok(t, "auth", "grant", "snapcli-writer", "snapcli", "write")
		as := func(args ...string) result { return tabulaEnv(t, devEnvWithToken(t, token), args...) }
		for _, args := range [][]string{
			{"snapshot", "create", "snapcli", "snapcli-w"},
			{"snapshot", "delete", "snapcli-1"},
			{"snapshot", "restore", "snapcli-1", "--yes"},
			{"snapshot", "clone", "snapcli-1", "snapcli-w"},
		} {
			if r := as(args...); r.code == 0 || !strings.Contains(r.stderr, "needs the admin role") {
				t.Errorf("a writer's tabula %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
			}
		}
		if r := as("snapshot", "describe", "snapcli-1"); r.code != 0 || !strings.Contains(r.stdout, "snapshot snapcli-1 of table snapcli") {
			t.Errorf("a writer's snapshot describe: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		ok(t, "auth", "revoke", "snapcli-writer", "snapcli")
	}

	ok(t, "snapshot", "delete", "snapcli-1")
	fails(t, []string{"snapshot", "delete", "snapcli-1"}, "does not exist")
	ok(t, "snapshot", "delete", safety)
	ok(t, "table", "delete", "snapcli")
	ok(t, "table", "delete", "snapcli-clone")
}
