package tabletserver

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/internal/embedetcd"
)

// etcd restarts (a crash, an upgrade) while a tablet server serves. The
// server pauses once it cannot prove its lease; etcd keeps leases across a
// restart, so when etcd is back the server renews the same lease and
// serves the same tablets at the same epoch: no reassignment, no replay,
// nothing acknowledged lost. etcd grants the lease a minute longer than
// the server counts on, so it survives the restart however long the
// server takes to reach etcd again (how fast clients reconnect is not
// this test's business).
func TestEtcdRestartPausesServersWithoutMovingTablets(t *testing.T) {
	dir := t.TempDir()
	client, err := embedetcd.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	peer, err := embedetcd.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	cfg := embedetcd.Config{Dir: dir, ClientAddr: client, PeerAddr: peer, NoFsync: true}
	etcd, err := embedetcd.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { etcd.Close() }()

	e := newEtcdEnv(t)
	cli, err := clientv3.New(clientv3.Config{Endpoints: etcd.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	e.cli = cli
	e.putSchema(e.schema)
	srv := e.startWithRenewals(&renewals{extraTTL: 60}, func(o *Options) { o.Etcd = etcd.Endpoints() })
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	if err := put(e.ctx, c, ref, "before", set("cf", "q", 1, "acked")); err != nil {
		t.Fatal(err)
	}
	lease := srv.leaseID.Load()

	etcd.Kill()
	eventually(t, 10*time.Second, "the server to pause", func() bool { return !srv.Serving() })
	wantNotServing(t, "write while etcd is down", put(e.ctx, c, ref, "during", set("cf", "q", 1, "x")), "users", "t1")
	t.Logf("%s restarting etcd", time.Now().Format("15:04:05.000"))
	etcd, err = embedetcd.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s etcd serves again", time.Now().Format("15:04:05.000"))

	eventually(t, 20*time.Second, "serving again", srv.Serving)
	if got := srv.leaseID.Load(); got != lease {
		t.Fatalf("the server registered again (lease %x -> %x); want it to keep its lease", lease, got)
	}
	if rec := e.tablet("t1"); rec.Epoch != 1 || rec.Lease != lease || rec.Server != srv.ID() {
		t.Fatalf("tablet after the etcd restart: %+v", rec.TabletRecord)
	}
	if err := put(e.ctx, c, ref, "after", set("cf", "q", 1, "acked")); err != nil {
		t.Fatalf("write after etcd came back: %v", err)
	}
	rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref})
	if err != nil || len(rows) != 2 {
		t.Fatalf("read after etcd came back: %v, %v; want after and before", rowKeys(rows), err)
	}
}
