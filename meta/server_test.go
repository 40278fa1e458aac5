package meta

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
)

// A server's registration lives and dies with its lease: granted, put
// under it, renewed, and gone (key and all) once revoked, after which a
// renewal says ErrLeaseNotFound.
func TestServerRegistrationFollowsItsLease(t *testing.T) {
	cli := newTwin(t)
	ctx := context.Background()
	l := NewLayout("")
	lease, err := GrantLease(ctx, cli, 1500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	ttl, err := cli.TimeToLive(ctx, clientv3.LeaseID(lease))
	if err != nil || ttl.GrantedTTL != 2 {
		t.Fatalf("granted TTL = %+v %v, want 2 s (1.5 s rounded up)", ttl, err)
	}
	if err := RegisterServer(ctx, cli, l, ServerRecord{ID: "s1", Address: "a:1"}); err == nil {
		t.Fatal("registering without a lease succeeded")
	}
	rec := ServerRecord{ID: "s1", Address: "a:1", StartTime: 7, Lease: lease}
	if err := RegisterServer(ctx, cli, l, rec); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, l.ServerKey("s1"))
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Lease != lease || string(resp.Kvs[0].Value) != EncodeServer(rec) {
		t.Fatalf("servers/s1 = %+v %v, want %s under lease %x", resp.Kvs, err, EncodeServer(rec), lease)
	}
	if err := RenewLease(ctx, cli, lease); err != nil {
		t.Fatalf("renewing a live lease: %v", err)
	}
	if err := RevokeLease(ctx, cli, 0); err != nil {
		t.Fatalf("revoking no lease: %v", err)
	}
	if err := RevokeLease(ctx, cli, lease); err != nil {
		t.Fatal(err)
	}
	if ss, err := GetServers(ctx, cli, l); err != nil || len(ss) != 0 {
		t.Fatalf("servers after the revoke = %+v %v, want none", ss, err)
	}
	if err := RenewLease(ctx, cli, lease); !errors.Is(err, ErrLeaseNotFound) {
		t.Fatalf("renewing a revoked lease: %v, want ErrLeaseNotFound", err)
	}
}

// Before the cluster keeps assignments/, ReadServerTablets reads the
// whole of tablets/ (paged: one key a page here) and keeps the server's
// own records with their ModRevisions, leaving out what is not a tablet
// record.
func TestReadServerTabletsWithoutMirrorsReadsTheWholeMap(t *testing.T) {
	cli := newTwin(t)
	ctx := context.Background()
	l := NewLayout("")
	putTablet(t, cli, l, TabletRecord{Table: "a", ID: "1", State: StateAssigned, Server: "s1", Lease: 5, Epoch: 1})
	putTablet(t, cli, l, TabletRecord{Table: "a", ID: "2", State: StateUnassigned})
	putTablet(t, cli, l, TabletRecord{Table: "b", ID: "2", State: StateAssigned, Server: "s1", Lease: 5, Epoch: 3})
	putTablet(t, cli, l, TabletRecord{Table: "b", ID: "4", State: StateAssigned, Server: "s2", Lease: 6, Epoch: 3})
	if _, err := cli.Put(ctx, l.TabletKey("b", "3"), "not json"); err != nil {
		t.Fatal(err)
	}
	got, rev, indexed, err := ReadServerTablets(ctx, cli, l, "s1", 1)
	if err != nil || indexed {
		t.Fatalf("indexed %v, err %v; want the whole map read", indexed, err)
	}
	if len(got) != 2 || got[0].ID != "1" || got[1].ID != "2" || got[1].Table != "b" || got[1].Epoch != 3 {
		t.Fatalf("ReadServerTablets = %+v", got)
	}
	vt, err := GetTablet(ctx, cli, l, "b", "2")
	if err != nil || vt.ModRevision != got[1].ModRevision {
		t.Fatalf("ModRevision %d, GetTablet says %+v %v", got[1].ModRevision, vt, err)
	}
	if rev < got[1].ModRevision {
		t.Fatalf("read revision %d is older than a record it read (%d)", rev, got[1].ModRevision)
	}
}

// Before the cluster keeps assignments/, FollowServerTablets reports puts
// and deletes of every tablet key from a revision on, in order, and
// nothing else under the prefix; it ends with ctx.
func TestFollowServerTabletsWithoutMirrorsReportsEveryTablet(t *testing.T) {
	cli := newTwin(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := NewLayout("")
	putTablet(t, cli, l, TabletRecord{Table: "a", ID: "old", State: StateUnassigned})
	_, rev, indexed, err := ReadServerTablets(ctx, cli, l, "s1", 0)
	if err != nil || indexed {
		t.Fatal(indexed, err)
	}
	// Written before the watch starts, after rev: replayed from history.
	putTablet(t, cli, l, TabletRecord{Table: "a", ID: "1", State: StateAssigned, Server: "s1", Epoch: 2})
	if _, err := cli.Put(ctx, l.AllTabletsPrefix()+"no-id", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(ctx, l.TabletKey("a", "old")); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, l.TabletKey("a", "bad"), "not json"); err != nil {
		t.Fatal(err)
	}
	var got []string
	done := make(chan error, 1)
	go func() {
		done <- FollowServerTablets(ctx, cli, l, "s1", rev+1, false, func(ev TabletEvent) error {
			rec, err := ev.Record()
			switch {
			case ev.Deleted:
				got = append(got, fmt.Sprintf("delete %s/%s (%v)", ev.Table, ev.ID, err != nil))
			case err != nil:
				got = append(got, fmt.Sprintf("put %s/%s undecodable", ev.Table, ev.ID))
			default:
				got = append(got, fmt.Sprintf("put %s/%s epoch %d on %s", ev.Table, ev.ID, rec.Epoch, rec.Server))
			}
			if len(got) == 3 {
				cancel()
			}
			return nil
		})
	}()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("FollowServerTablets ended with %v, want the context's end", err)
	}
	want := []string{"put a/1 epoch 2 on s1", "delete a/old (true)", "put a/bad undecodable"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events %q, want %q", got, want)
	}
}

func TestEtcdErrorCode(t *testing.T) {
	for _, c := range []struct {
		err    error
		code   codes.Code
		isEtcd bool
	}{
		{fmt.Errorf("wrapped: %w", rpctypes.ErrNoLeader), codes.Unavailable, true},
		{rpctypes.ErrTimeout, codes.Unavailable, true},
		{rpctypes.ErrRequestTooLarge, codes.InvalidArgument, true},
		{errors.New("not etcd's"), codes.OK, false},
	} {
		code, isEtcd := EtcdErrorCode(c.err)
		if code != c.code || isEtcd != c.isEtcd {
			t.Errorf("EtcdErrorCode(%v) = %v, %v; want %v, %v", c.err, code, isEtcd, c.code, c.isEtcd)
		}
	}
}
