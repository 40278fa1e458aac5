package tabletserver

import (
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/meta/faultstore"
)

// A server registering releases the tablets its id holds under leases
// that are gone, and leaves those under another live lease (another
// incarnation of the id, maybe paused) to the master. etcd answers TTL 0
// for a lease with under a second left (it truncates): that lease is live,
// and its tablets are not released; once etcd answers -1 they are.
func TestRegistrationLeavesATabletUnderALeaseWithUnderASecondLeft(t *testing.T) {
	fs := faultstore.New(nil)
	e := newEnv(t)
	srv := e.start(func(o *Options) { o.WrapStore = fs.Wrap })
	other, err := e.cli.Grant(e.ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	rec := meta.TabletRecord{Table: e.schema.Name, ID: "t1", State: meta.StateAssigned, Server: srv.ID(), Address: srv.Addr(), Epoch: 3, Lease: int64(other.ID)}
	e.putRecord(rec)
	fs.AnswerTTL(other.ID, 0) // 0.x s left
	if err := srv.releaseAssignments(e.ctx, srv.leaseID.Load()); err != nil {
		t.Fatal(err)
	}
	if got := e.tablet("t1"); got.State != meta.StateAssigned || got.Lease != int64(other.ID) {
		t.Fatalf("a tablet under a lease etcd answers TTL 0 for was released: %+v", got.TabletRecord)
	}
	if _, err := e.cli.Revoke(e.ctx, clientv3.LeaseID(other.ID)); err != nil {
		t.Fatal(err)
	}
	if err := srv.releaseAssignments(e.ctx, srv.leaseID.Load()); err != nil {
		t.Fatal(err)
	}
	if got := e.tablet("t1"); got.State != meta.StateUnassigned || got.Lease != 0 {
		t.Fatalf("a tablet under a gone lease was not released: %+v", got.TabletRecord)
	}
}
