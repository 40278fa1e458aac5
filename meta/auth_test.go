package meta

import (
	"testing"
)

// Frozen auth records (see fixtures_test.go for what frozen means): the
// files hold tokens and grants exactly as the auth package wrote them
// before meta stored them. They must decode to these records, and the
// records must encode to the same bytes, so that tokens and grants written
// by either release read the same.
var (
	fixtureTokens = map[string]TokenRecord{
		"auth-token.json": {Principal: "alice", SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
			Description: "etl job", Created: 1_700_000_000},
		// No description: the field is left out.
		"auth-token-bare.json": {Principal: "svc_etl", SHA256: "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752",
			Created: 1_600_000_000},
	}
	fixtureGrants = map[string]GrantRecord{"auth-grant.json": {Role: "write"}}
)

func TestFrozenAuthRecords(t *testing.T) {
	for name, w := range fixtureTokens {
		t.Run(name, func(t *testing.T) {
			b := readFixtureRecord(t, name)
			got, err := DecodeToken(b)
			if err != nil {
				t.Fatal(err)
			}
			if got != w {
				t.Errorf("got %+v, want %+v", got, w)
			}
			if enc := EncodeToken(w); enc != string(b) {
				t.Errorf("EncodeToken = %s, want the frozen %s", enc, b)
			}
		})
	}
	l := NewLayout("")
	for name, w := range fixtureGrants {
		t.Run(name, func(t *testing.T) {
			b := readFixtureRecord(t, name)
			got, err := DecodeGrant(l, []byte(l.AuthGrantKey("alice", "users")), b)
			if err != nil {
				t.Fatal(err)
			}
			if want := (GrantEntry{Principal: "alice", Table: "users", GrantRecord: w}); got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
			if enc := EncodeGrant(w); enc != string(b) {
				t.Errorf("EncodeGrant = %s, want the frozen %s", enc, b)
			}
		})
	}
}

func TestAuthKeys(t *testing.T) {
	l := NewLayout("c1")
	cases := []struct{ got, want string }{
		{l.AuthPrefix(), "/tabula/c1/auth/"},
		{l.AuthTokenKey("0123456789abcdef"), "/tabula/c1/auth/tokens/0123456789abcdef"},
		{l.AuthGrantKey("alice", "*"), "/tabula/c1/auth/grants/alice/*"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	// A grant's key splits at the first '/' after grants/ (as auth always
	// read it); a key without one has no table.
	if _, err := DecodeGrant(l, []byte(l.AuthGrantsPrefix()+"alice"), []byte(`{"role":"read"}`)); err == nil {
		t.Error("DecodeGrant accepted a key without a table")
	}
	for _, tc := range []struct {
		key     string
		deleted bool
		want    AuthEntry
	}{
		{l.AuthTokenKey("ab"), true, AuthEntry{Key: l.AuthTokenKey("ab"), IsToken: true, ID: "ab", Deleted: true}},
		{l.AuthGrantKey("bob", "t"), true, AuthEntry{Key: l.AuthGrantKey("bob", "t"), IsGrant: true, Grant: GrantEntry{Principal: "bob", Table: "t"}, Deleted: true}},
		{l.AuthPrefix() + "other", true, AuthEntry{Key: l.AuthPrefix() + "other", Deleted: true}},
	} {
		if got := authEntry(l, []byte(tc.key), nil, tc.deleted); got != tc.want {
			t.Errorf("authEntry(%q) = %+v, want %+v", tc.key, got, tc.want)
		}
	}
}
