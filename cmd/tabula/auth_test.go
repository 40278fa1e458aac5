package main

import (
	"strings"
	"testing"
)

// TestAuthCommands drives `tabula auth` against the dev cluster started
// with --auth (the secure pass of `make test`, TABULA_TEST_SECURE=1): a
// token with a read grant reads and is refused writes with a hint, the
// grant and token show in the lists, and a revoked token is refused.
func TestAuthCommands(t *testing.T) {
	if !secureAll() {
		t.Skip("needs the dev cluster with --auth: run with TABULA_TEST_SECURE=1 (make test does)")
	}
	ok(t, "table", "create", "authz", "--family", "f")
	ok(t, "put", "authz", "r1", "f:a=1", "--timestamp", "5")
	if out := ok(t, "auth", "whoami"); !strings.Contains(out, "principal tabula-admin (by token)") || !strings.Contains(out, "admin on *") {
		t.Errorf("whoami:\n%s", out)
	}
	out := ok(t, "auth", "token", "create", "cli-reader", "--description", "cli test")
	token := strings.TrimSpace(strings.SplitN(out, "\n", 2)[0])
	if !strings.HasPrefix(token, "tabula_") {
		t.Fatalf("token create printed %q", out)
	}
	id := token[len("tabula_") : len("tabula_")+16]
	ok(t, "auth", "grant", "cli-reader", "authz", "read")
	if out := ok(t, "auth", "list", "--principal", "cli-reader"); !strings.Contains(out, "cli-reader") || !strings.Contains(out, "read") {
		t.Errorf("auth list:\n%s", out)
	}
	if out := ok(t, "auth", "token", "list", "--principal", "cli-reader"); !strings.Contains(out, id) || !strings.Contains(out, "cli test") {
		t.Errorf("token list:\n%s", out)
	}
	as := func(args ...string) result {
		return tabulaEnv(t, devEnvWithToken(t, token), args...)
	}
	if r := as("get", "authz", "r1"); r.code != 0 || !strings.Contains(r.stdout, "f:a") {
		t.Errorf("reader get: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := as("put", "authz", "r2", "f:a=2", "--timestamp", "5")
	if r.code == 0 || !strings.Contains(r.stderr, "needs the write role") || !strings.Contains(r.stderr, "tabula auth grant cli-reader authz write") {
		t.Errorf("reader put: exit %d\n%s", r.code, r.stderr)
	}
	if r := as("auth", "token", "create", "cli-reader"); r.code == 0 || !strings.Contains(r.stderr, "admin role") {
		t.Errorf("reader token create: exit %d\n%s", r.code, r.stderr)
	}
	ok(t, "auth", "token", "revoke", id)
	if r := as("get", "authz", "r1"); r.code == 0 || !strings.Contains(r.stderr, "not valid") {
		t.Errorf("revoked token get: exit %d\n%s", r.code, r.stderr)
	}
	if r := tabulaEnv(t, []string{"TABULA_MASTER=" + devCluster(t)}, "get", "authz", "r1"); r.code == 0 || !strings.Contains(r.stderr, "TLS") {
		t.Errorf("plaintext get: exit %d\n%s", r.code, r.stderr)
	}
	fails(t, []string{"auth", "grant", "x", "authz", "owner"}, "unknown role")
	fails(t, []string{"auth", "token", "create", "tabula-master"}, "certificate only")
	ok(t, "auth", "revoke", "cli-reader", "authz")
}

// devEnvWithToken is the secured dev cluster's environment with another
// token.
func devEnvWithToken(t *testing.T, token string) []string {
	env := []string{"TABULA_MASTER=" + devCluster(t)}
	for _, e := range devSecurityEnv(t) {
		if !strings.HasPrefix(e, "TABULA_TOKEN=") {
			env = append(env, e)
		}
	}
	return append(env, "TABULA_TOKEN="+token)
}
