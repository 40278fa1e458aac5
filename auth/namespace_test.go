package auth

import (
	"context"
	"errors"
	"testing"

	"github.com/tabuladb/tabula/meta"
)

// TestNamespaceGrants: a grant on "ns:*" gives its role on every table of
// ns, and on no table of another namespace or of the default one;
// "default:*" covers the tables named without a prefix.
func TestNamespaceGrants(t *testing.T) {
	cli := startEtcd(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := meta.NewLayout("c1")
	c := startCache(t, ctx, cli, l)
	if err := c.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	for _, g := range []Grant{
		{Principal: "alice", Table: NamespaceGrant("a"), Role: Write},
		{Principal: "bob", Table: NamespaceGrant("default"), Role: Read},
	} {
		if err := SetGrant(ctx, cli, l, g); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "grants seen", func() bool { return c.RoleOn("alice", "a:t") == Write && c.RoleOn("bob", "t") == Read })
	for _, x := range []struct {
		who, table string
		want       Role
	}{
		{"alice", "a:t", Write}, {"alice", "a:other", Write}, {"alice", "b:t", None}, {"alice", "t", None},
		{"alice", "ab:t", None}, {"alice", AllTables, None},
		{"bob", "t", Read}, {"bob", "a:t", None},
	} {
		if got := c.RoleOn(x.who, x.table); got != x.want {
			t.Errorf("RoleOn(%s, %s) = %s, want %s", x.who, x.table, got, x.want)
		}
	}
	for _, bad := range []string{"a.b:*", ":*", "a:b:*"} {
		if err := SetGrant(ctx, cli, l, Grant{Principal: "alice", Table: bad, Role: Read}); !errors.Is(err, ErrInvalid) {
			t.Errorf("grant on %q: %v, want ErrInvalid", bad, err)
		}
	}
}
