package main

import (
	"strings"
	"testing"
)

// tabula quota set, list and remove go through the master's Quotas
// service (docs/OPERATIONS.md "Quotas") and refuse what is not a quota,
// saying what is wrong. The names are this test's own: the dev cluster is
// shared, and no other test's calls may meet these quotas. In the secure
// pass (TABULA_TEST_SECURE=1) a token without the cluster's admin role is
// refused to set and remove a quota, and one with read lists them.
func TestQuotaSetListRemove(t *testing.T) {
	ok(t, "quota", "set", "principal", "quota-cli-batch", "--write-requests", "500", "--write-bytes", "10MiB")
	ok(t, "quota", "set", "namespace", "quotacli", "--space", "1GiB")
	out := ok(t, "quota", "list", "-o", "json")
	if !strings.Contains(out, `"name":"quota-cli-batch"`) || !strings.Contains(out, `"write_bytes":10485760`) ||
		!strings.Contains(out, `"space_bytes":1073741824`) {
		t.Fatalf("quota list: %s", out)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"quota", "set", "user", "x", "--read-requests", "1"}, "want table, namespace or principal"},
		{[]string{"quota", "set", "table", "quotacli-t"}, "no limit given"},
		{[]string{"quota", "set", "principal", "p", "--space", "1GiB"}, "not principals"},
		{[]string{"quota", "set", "table", "quotacli-t", "--read-requests", "fast"}, "is not a rate"},
	} {
		if r := fails(t, bad.args, bad.want); r.code != 2 {
			t.Errorf("tabula %s: exit %d, want 2 (usage); %s", strings.Join(bad.args, " "), r.code, r.stderr)
		}
	}
	// The master's own checks: names as tables and namespaces are named.
	fails(t, []string{"quota", "set", "table", "default:quotacli-t", "--read-requests", "1"}, `write "quotacli-t"`)
	fails(t, []string{"quota", "set", "namespace", "bad.name", "--read-requests", "1"}, "A-Z a-z 0-9 _ -")

	if secureAll() {
		out := ok(t, "auth", "token", "create", "quota-cli-writer")
		token := strings.TrimSpace(strings.SplitN(out, "\n", 2)[0])
		ok(t, "auth", "grant", "quota-cli-writer", "*", "write")
		as := func(args ...string) result { return tabulaEnv(t, devEnvWithToken(t, token), args...) }
		for _, args := range [][]string{
			{"quota", "set", "principal", "quota-cli-writer", "--write-requests", "1000000"},
			{"quota", "remove", "principal", "quota-cli-batch"},
			{"quota", "set", "namespace", "quotacli", "--space", "2GiB"},
		} {
			if r := as(args...); r.code == 0 || !strings.Contains(r.stderr, "needs the admin role") {
				t.Errorf("a writer's tabula %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
			}
		}
		if r := as("quota", "list"); r.code != 0 || !strings.Contains(r.stdout, "quota-cli-batch") {
			t.Errorf("a writer's quota list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		ok(t, "auth", "revoke", "quota-cli-writer", "*")
	}

	ok(t, "quota", "remove", "principal", "quota-cli-batch")
	fails(t, []string{"quota", "remove", "principal", "quota-cli-batch"}, "has no quota")
	if out := ok(t, "quota", "list"); strings.Contains(out, "quota-cli-batch") || !strings.Contains(out, "quotacli") {
		t.Fatalf("quota list after remove: %s", out)
	}
	ok(t, "quota", "remove", "namespace", "quotacli")
}
