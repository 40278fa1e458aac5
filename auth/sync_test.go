package auth

import (
	"context"
	"strings"
	"sync/atomic"
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

// heldReads is a silentWatch whose reads of auth/, once held is set, are
// counted, announced on entered as they start, and wait for hold to close
// (or their context to end).
type heldReads struct {
	silentWatch
	prefix  string
	held    atomic.Bool
	reads   atomic.Int64
	hold    chan struct{}
	entered chan struct{}
}

func (h *heldReads) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	if key == h.prefix && h.held.Load() {
		h.reads.Add(1)
		h.entered <- struct{}{}
		select {
		case <-h.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return h.silentWatch.Get(ctx, key, opts...)
}

// startHeldCache returns a cache loaded on a heldReads store whose later
// reads are held until the test closes hold.
func startHeldCache(t *testing.T) (*heldReads, *Cache) {
	t.Helper()
	l := meta.NewLayout("")
	h := &heldReads{silentWatch: silentWatch{startEtcd(t)}, prefix: l.AuthPrefix(),
		hold: make(chan struct{}), entered: make(chan struct{}, 64)}
	ctx, cancel := context.WithCancel(context.Background())
	cache := startCache(t, ctx, h, l)
	t.Cleanup(cancel)
	if err := cache.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	h.held.Store(true)
	return h, cache
}

// TestSyncsShareOneRead: callers that ask while a read runs are served by
// one read that begins after it, however many they are; no read is closer
// to the one before than syncEvery.
func TestSyncsShareOneRead(t *testing.T) {
	h, cache := startHeldCache(t)
	// Long enough that the callers below have all called before the
	// second read begins, on any machine.
	const every = 500 * time.Millisecond
	cache.syncEvery = every
	ctx := context.Background()

	began := time.Now()
	first := make(chan error, 1)
	go func() { first <- cache.Sync(ctx) }()
	<-h.entered // the first read has begun: the callers below came after it
	const callers = 20
	errs := make(chan error, callers)
	for range callers {
		go func() { errs <- cache.Sync(ctx) }()
	}
	close(h.hold)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for range callers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := h.reads.Load(); got != 2 {
		t.Fatalf("1 + %d concurrent Syncs made %d reads of auth/, want 2 (one shared by the %d that came during the first)", callers, got, callers)
	}
	// The second read waited out the spacing from the first's start.
	if took := time.Since(began); took < every {
		t.Fatalf("both reads done %v after the first began, less than the spacing %v", took, every)
	}
}

// TestSyncGivesUpOnAHungStore: a Sync whose read does not answer ends
// with an error after syncTimeout, and the guard's refusal stands instead
// of hanging with it.
func TestSyncGivesUpOnAHungStore(t *testing.T) {
	h, cache := startHeldCache(t)
	cache.syncTimeout = 20 * time.Millisecond
	g := NewGuard(GuardConfig{Rules: TabletServerRules(), Cache: cache})
	read := &pb.ReadRowsRequest{Tablet: &pb.TabletRef{Table: "t"}}
	// A well-formed token the cache does not know: the guard asks etcd,
	// which never answers (hold stays open).
	tok := tokenPrefix + strings.Repeat("a", 16) + "_" + strings.Repeat("b", 64)
	if _, _, err := parseToken(tok); err != nil {
		t.Fatalf("the test's token is malformed: %v", err)
	}
	_, _, err := g.check(callCtx("", tok), "/tabula.v1.TabletServer/ReadRows", read)
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("an unknown token while etcd hangs: %v, want UNAUTHENTICATED", err)
	}
	if got := h.reads.Load(); got != 1 {
		t.Fatalf("%d reads of auth/, want the one that timed out", got)
	}
}
