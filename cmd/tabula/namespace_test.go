package main

import (
	"strings"
	"testing"
)

// TestNamespaceCommands drives `tabula namespace` and NS:TABLE names
// against the dev cluster: a table of the same name in two namespaces and
// the default one holds its own rows only; a namespace's tables are
// listed together; a table in a missing namespace and the deletion of a
// non-empty namespace are refused naming the fix; --recursive deletes it
// with its tables. In the secure pass (TABULA_TEST_SECURE=1) a principal
// granted "nsa:*" is refused on the other namespace's table.
func TestNamespaceCommands(t *testing.T) {
	fails(t, []string{"namespace", "create", "bad.name"}, "A-Z a-z 0-9 _ -")
	fails(t, []string{"table", "create", "nsmissing:t", "--family", "f"}, "tabula namespace create nsmissing")
	ok(t, "namespace", "create", "nsa", "--max-tables", "2", "--description", "team a")
	ok(t, "namespace", "create", "nsb")
	for _, name := range []string{"nsa:same", "nsb:same", "same"} {
		ok(t, "table", "create", name, "--family", "f")
		ok(t, "put", name, "r", "f:q="+name, "--timestamp", "5")
		ok(t, "put", name, "only-"+strings.ReplaceAll(name, ":", "-"), "f:q=x", "--timestamp", "5")
	}
	for _, name := range []string{"nsa:same", "nsb:same", "same"} {
		wantList(t, "get "+name, summary(t, ok(t, "get", name, "r", "--output", "json")), "r/f:q@5="+name)
		wantList(t, "scan "+name, rowsOf(t, ok(t, "scan", name, "--output", "json")), "only-"+strings.ReplaceAll(name, ":", "-"), "r")
	}
	wantList(t, "get default:same", summary(t, ok(t, "get", "default:same", "r", "--output", "json")), "r/f:q@5=same")
	if out := ok(t, "table", "list", "--namespace", "nsa"); !strings.Contains(out, "nsa:same") || strings.Contains(out, "nsb:") {
		t.Errorf("table list --namespace nsa:\n%s", out)
	}
	if out := ok(t, "namespace", "describe", "nsa"); !strings.Contains(out, "max tables: 2") || !strings.Contains(out, "tables (1): nsa:same") {
		t.Errorf("namespace describe nsa:\n%s", out)
	}
	if out := ok(t, "namespace", "list"); !strings.Contains(out, "nsa") || !strings.Contains(out, "default") {
		t.Errorf("namespace list:\n%s", out)
	}
	fails(t, []string{"namespace", "delete", "nsa"}, "--recursive")
	fails(t, []string{"namespace", "delete", "default"}, "cannot be deleted")

	if secureAll() {
		out := ok(t, "auth", "token", "create", "team-nsa")
		token := strings.TrimSpace(strings.SplitN(out, "\n", 2)[0])
		ok(t, "auth", "grant", "team-nsa", "nsa:*", "write")
		as := func(args ...string) result { return tabulaEnv(t, devEnvWithToken(t, token), args...) }
		if r := as("put", "nsa:same", "t", "f:q=1", "--timestamp", "5"); r.code != 0 {
			t.Errorf("team-nsa put in its namespace: exit %d\n%s", r.code, r.stderr)
		}
		for _, other := range []string{"nsb:same", "same"} {
			if r := as("get", other, "r"); r.code == 0 || !strings.Contains(r.stderr, "needs the read role") {
				t.Errorf("team-nsa get %s: exit %d\n%s", other, r.code, r.stderr)
			}
		}
		ok(t, "auth", "revoke", "team-nsa", "nsa:*")
	}

	if out := ok(t, "namespace", "delete", "nsa", "--recursive"); !strings.Contains(out, "1 table(s)") {
		t.Errorf("namespace delete --recursive:\n%s", out)
	}
	fails(t, []string{"namespace", "describe", "nsa"}, "does not exist")
	wantList(t, "get nsb:same after nsa's deletion", summary(t, ok(t, "get", "nsb:same", "r", "--output", "json")), "r/f:q@5=nsb:same")
	ok(t, "namespace", "delete", "nsb", "--recursive")
	ok(t, "table", "delete", "same")
}
