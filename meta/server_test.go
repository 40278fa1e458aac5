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

// ReadAllTablets reads every table's tablets with their ModRevisions and
// leaves out what is not a tablet record.
func TestReadAllTabletsSkipsWhatDoesNotDecode(t *testing.T) {
	cli := newTwin(t)
	ctx := context.Background()
	l := NewLayout("")
	putTablet(t, cli, l, TabletRecord{Table: "a", ID: "1", State: StateUnassigned})
	putTablet(t, cli, l, TabletRecord{Table: "b", ID: "2", State: StateAssigned, Server: "s1", Lease: 5, Epoch: 3})
	if _, err := cli.Put(ctx, l.TabletKey("b", "3"), "not json"); err != nil {
		t.Fatal(err)
	}
	got, rev, err := ReadAllTablets(ctx, cli, l)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "1" || got[1].ID != "2" || got[1].Epoch != 3 {
		t.Fatalf("ReadAllTablets = %+v", got)
	}
	vt, err := GetTablet(ctx, cli, l, "b", "2")
	if err != nil || vt.ModRevision != got[1].ModRevision {
		t.Fatalf("ModRevision %d, GetTablet says %+v %v", got[1].ModRevision, vt, err)
	}
	if rev < got[1].ModRevision {
		t.Fatalf("read revision %d is older than a record it read (%d)", rev, got[1].ModRevision)
	}
}

// FollowTablets reports puts and deletes of tablet keys from a revision on,
// in order, and nothing else under the prefix; it ends with ctx.
func TestFollowTabletsReportsPutsAndDeletes(t *testing.T) {
	cli := newTwin(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := NewLayout("")
	putTablet(t, cli, l, TabletRecord{Table: "a", ID: "old", State: StateUnassigned})
	_, rev, err := ReadAllTablets(ctx, cli, l)
	if err != nil {
		t.Fatal(err)
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
		done <- FollowTablets(ctx, cli, l, rev+1, func(ev TabletEvent) {
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
		})
	}()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("FollowTablets ended with %v, want the context's end", err)
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
