package auth

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/meta"
)

func TestTokenFormat(t *testing.T) {
	tok, id, hash, err := newToken()
	if err != nil {
		t.Fatal(err)
	}
	gotID, secret, err := parseToken(tok)
	if err != nil || gotID != id {
		t.Fatalf("parseToken(%q) = %q, %v; want id %q", tok, gotID, err, id)
	}
	if !secretMatches(secret, hash) {
		t.Fatal("the secret does not match its own hash")
	}
	if secretMatches(strings.Repeat("0", 64), hash) {
		t.Fatal("another secret matches")
	}
	for _, bad := range []string{"", "tabula_", "tabula_" + id, "tabula_" + id + "_abc", "x" + tok[1:],
		"tabula_" + strings.ToUpper(id) + tok[len("tabula_")+16:], tok + "0"} {
		if _, _, err := parseToken(bad); err == nil {
			t.Errorf("parseToken(%q) accepted", bad)
		}
	}
}

func TestPrincipalNames(t *testing.T) {
	for _, ok := range []string{"alice", "svc_etl", "a.b@example.com", "@ops", "x-1"} {
		if err := ValidatePrincipal(ok); err != nil {
			t.Errorf("ValidatePrincipal(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "-x", "a/b", "a b", "é", strings.Repeat("a", 129)} {
		if err := ValidatePrincipal(bad); err == nil {
			t.Errorf("ValidatePrincipal(%q) accepted", bad)
		}
	}
}

func TestRecordsAndCache(t *testing.T) {
	cli := startEtcd(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := meta.NewLayout("c1")
	c := startCache(t, ctx, cli, l)
	if err := c.Wait(ctx); err != nil {
		t.Fatal(err)
	}

	tok, info, err := CreateToken(ctx, cli, l, "alice", "etl job", time.Unix(1000, 0))
	if err != nil {
		t.Fatal(err)
	}
	if info.Principal != "alice" || info.Description != "etl job" || len(info.ID) != 16 {
		t.Fatalf("info %+v", info)
	}
	eventually(t, "new token accepted", func() bool {
		p, err := c.Authenticate(tok)
		return err == nil && p == "alice"
	})
	if _, err := c.Authenticate(tok[:len(tok)-1] + "0"); err == nil && !strings.HasSuffix(tok, "0") {
		t.Fatal("a token with a wrong secret was accepted")
	}

	// Roles: a table grant, then a cluster grant that is higher.
	if err := SetGrant(ctx, cli, l, Grant{Principal: "alice", Table: "t1", Role: Write}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "grant seen", func() bool { return c.RoleOn("alice", "t1") == Write })
	if r := c.RoleOn("alice", "t2"); r != None {
		t.Fatalf("role on t2 = %v, want none", r)
	}
	if err := SetGrant(ctx, cli, l, Grant{Principal: "alice", Table: AllTables, Role: Read}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "cluster grant seen", func() bool { return c.RoleOn("alice", "t2") == Read })
	if r := c.RoleOn("alice", "t1"); r != Write {
		t.Fatalf("role on t1 = %v, want write (the higher of t1's and *'s)", r)
	}
	gs, err := ListGrants(ctx, cli, l, "alice", "")
	if err != nil || len(gs) != 2 || gs[0].Table != AllTables || gs[1].Table != "t1" {
		t.Fatalf("ListGrants = %+v, %v", gs, err)
	}

	// Revocations take effect through the watch.
	if err := DeleteGrant(ctx, cli, l, "alice", "t1"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "grant revoked", func() bool { return c.RoleOn("alice", "t1") == Read })
	if err := DeleteGrant(ctx, cli, l, "alice", "t1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second DeleteGrant: %v, want ErrNotFound", err)
	}
	ts, err := ListTokens(ctx, cli, l, "alice")
	if err != nil || len(ts) != 1 || ts[0].ID != info.ID {
		t.Fatalf("ListTokens = %+v, %v", ts, err)
	}
	if err := RevokeToken(ctx, cli, l, info.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, "token revoked", func() bool { _, err := c.Authenticate(tok); return err != nil })
	if err := RevokeToken(ctx, cli, l, info.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second RevokeToken: %v, want ErrNotFound", err)
	}

	// A cache started later loads what is there.
	c2 := startCache(t, ctx, cli, l)
	if err := c2.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if r := c2.RoleOn("alice", "t9"); r != Read {
		t.Fatalf("fresh cache: role %v, want read", r)
	}
}

func TestRecordsRefuseBadInput(t *testing.T) {
	cli := startEtcd(t)
	ctx := context.Background()
	l := meta.NewLayout("")
	for _, p := range []string{MasterName, TabletServerName, "", "a/b"} {
		if _, _, err := CreateToken(ctx, cli, l, p, "", time.Now()); !errors.Is(err, ErrInvalid) {
			t.Errorf("CreateToken(%q): %v, want ErrInvalid", p, err)
		}
		if err := SetGrant(ctx, cli, l, Grant{Principal: p, Table: "t", Role: Admin}); !errors.Is(err, ErrInvalid) {
			t.Errorf("SetGrant(%q): %v, want ErrInvalid", p, err)
		}
	}
	for _, tb := range []string{"", "..", "a/b", "**"} {
		if err := SetGrant(ctx, cli, l, Grant{Principal: "bob", Table: tb, Role: Read}); !errors.Is(err, ErrInvalid) {
			t.Errorf("SetGrant(table %q): %v, want ErrInvalid", tb, err)
		}
	}
	if err := SetGrant(ctx, cli, l, Grant{Principal: "bob", Table: "t", Role: None}); !errors.Is(err, ErrInvalid) {
		t.Errorf("SetGrant(role none): %v, want ErrInvalid", err)
	}
	if err := RevokeToken(ctx, cli, l, "../../x"); !errors.Is(err, ErrInvalid) {
		t.Errorf("RevokeToken(bad id): %v, want ErrInvalid", err)
	}
	resp, err := cli.Get(ctx, l.AuthPrefix(), withPrefix())
	if err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("refused calls wrote %d keys (err %v)", len(resp.Kvs), err)
	}
}
