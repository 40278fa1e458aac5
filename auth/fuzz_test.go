package auth

import (
	"context"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	pb "github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

// FuzzBearerToken: whatever a caller puts in its authorization header,
// the guard answers UNAUTHENTICATED (or, for the one real token, lets it
// through) and never panics; token parsing accepts only the exact form.
func FuzzBearerToken(f *testing.F) {
	real, id, hash, err := newToken()
	if err != nil {
		f.Fatal(err)
	}
	c := &Cache{layout: meta.NewLayout(""), loaded: make(chan struct{}),
		tokens: map[string]meta.TokenRecord{id: {Principal: "p", SHA256: hash}},
		grants: map[string]map[string]Role{"p": {AllTables: Read}}}
	close(c.loaded)
	g := NewGuard(GuardConfig{Rules: TabletServerRules(), Cache: c, MutualTLS: true})
	for _, s := range []string{real, "", "tabula_", "Bearer x", real[:20], real + "\x00", strings.ToUpper(real)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		if i, s, err := parseToken(tok); err == nil && (len(i) != 16 || len(s) != 64 || tok != tokenPrefix+i+"_"+s) {
			t.Fatalf("parseToken(%q) accepted a malformed token", tok)
		}
		ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{}})
		ctx = metadata.NewIncomingContext(ctx, metadata.Pairs("authorization", "Bearer "+tok))
		_, _, err := g.check(ctx, "/tabula.v1.TabletServer/ReadRows", &pb.ReadRowsRequest{Tablet: &pb.TabletRef{Table: "t"}})
		want := codes.Unauthenticated
		if strings.TrimSpace(tok) == real {
			want = codes.OK
		}
		if status.Code(err) != want {
			t.Fatalf("token %q: %v, want %v", tok, err, want)
		}
	})
}

// FuzzGrantRecord: a grant record from etcd that does not decode is
// skipped (it grants nothing), never a panic.
func FuzzGrantRecord(f *testing.F) {
	l := meta.NewLayout("")
	f.Add("alice/t", `{"role":"read"}`)
	f.Add("alice", `{"role":"admin"}`)
	f.Add("a/b/c", `{"role":"root"}`)
	f.Add("x/*", `not json`)
	f.Fuzz(func(t *testing.T, key, value string) {
		e, err := meta.DecodeGrant(l, []byte(l.AuthGrantsPrefix()+key), []byte(value))
		var g Grant
		if err == nil {
			g, err = grantOf(e)
		}
		if err == nil && (g.Role < Read || g.Role > Admin) {
			t.Fatalf("decoded a grant with role %v", g.Role)
		}
	})
}
