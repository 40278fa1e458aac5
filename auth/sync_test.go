package auth

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

// silentWatch is an etcd client whose watches deliver nothing until their
// context ends: a cache on it sees only what it reads.
type silentWatch struct{ *clientv3.Client }

func (silentWatch) Watch(ctx context.Context, _ string, _ ...clientv3.OpOption) clientv3.WatchChan {
	ch := make(chan clientv3.WatchResponse)
	go func() {
		<-ctx.Done()
		close(ch)
	}()
	return ch
}

// startSilentCache returns an etcd client and a loaded cache of its
// records (layout "") whose watch delivers nothing.
func startSilentCache(t *testing.T) (*clientv3.Client, *Cache) {
	t.Helper()
	cli := startEtcd(t)
	ctx, cancel := context.WithCancel(context.Background())
	cache := startCache(t, ctx, silentWatch{cli}, meta.NewLayout(""))
	// Registered after startCache's, so it runs before that waits for Run.
	t.Cleanup(cancel)
	if err := cache.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	return cli, cache
}

// TestGuardSeesNewCredentialsAtOnce: a token and a grant made just now are
// honoured by the next call, even before the watch delivers them (here it
// never does): an admin call that returned has its effect.
func TestGuardSeesNewCredentialsAtOnce(t *testing.T) {
	cli, cache := startSilentCache(t)
	ctx, l := context.Background(), meta.NewLayout("")
	g := NewGuard(GuardConfig{Rules: TabletServerRules(), Cache: cache})
	read := &pb.ReadRowsRequest{Tablet: &pb.TabletRef{Table: "t"}}
	const method = "/tabula.v1.TabletServer/ReadRows"

	tok, _, err := CreateToken(ctx, cli, l, "late", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// Known now, but with no role yet.
	if _, _, err := g.check(callCtx("", tok), method, read); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("a new token without a grant: %v, want PERMISSION_DENIED", err)
	}
	if err := SetGrant(ctx, cli, l, Grant{Principal: "late", Table: "t", Role: Read}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.check(callCtx("", tok), method, read); err != nil {
		t.Fatalf("a new token with a new grant: %v, want it let in", err)
	}
	if _, _, err := g.check(callCtx("", "hunter2"), method, read); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("a garbage token: %v, want UNAUTHENTICATED", err)
	}
}

// TestCacheNeverGoesBack: a watch change older than what a Sync read is
// skipped, so a token revoked before the Sync does not come back when
// the watch delivers its creation late.
func TestCacheNeverGoesBack(t *testing.T) {
	cli, cache := startSilentCache(t)
	ctx, l := context.Background(), meta.NewLayout("")
	tok, info, err := CreateToken(ctx, cli, l, "gone", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, l.AuthTokenKey(info.ID))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("reading the token back: %v", err)
	}
	created := resp.Kvs[0]
	if err := RevokeToken(ctx, cli, l, info.ID); err != nil {
		t.Fatal(err)
	}
	if err := cache.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	// The watch's late delivery of the creation.
	late := meta.AuthEntry{Key: string(created.Key), IsToken: true, ID: info.ID, Rev: created.ModRevision}
	late.Token, _ = meta.DecodeToken(created.Value)
	cache.apply([]meta.AuthEntry{late})
	if _, err := cache.Authenticate(tok); err == nil {
		t.Fatal("a token revoked before the Sync came back with the watch's late news of its creation")
	}
}
