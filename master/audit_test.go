package master

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

// A server whose split of a tablet has an unknown outcome drops the parent
// and refuses its epoch (tabletserver dropUnsettled). The audit finds it
// not served; the master's reloads at that epoch are refused, so it takes
// the parent back and gives it out at a new epoch through meta.Assign,
// whose transaction is guarded by the parent's ModRevision like the
// split's: once the master has done so, the split arriving late can no
// longer land.
func TestAuditedParentOfAnUnsettledSplitIsReassignedUnderTheSplitsGuard(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{})
	s1 := c.startServer("s1")
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	if _, err := mc.CreateTable(context.Background(), &tabulapb.CreateTableRequest{Schema: schema("t", "cf")}); err != nil {
		t.Fatal(err)
	}
	parent := waitAllLoaded(t, c, "t", 1, s1)[0]
	child := parent.TabletRecord
	child.Epoch, child.Parent = parent.Epoch+1, parent.ID
	left, right := child, child
	left.ID, left.End = meta.NewTabletID(), []byte("m")
	right.ID, right.Start = meta.NewTabletID(), []byte("m")

	// The split's answer was lost and its fences got none either: s1 drops
	// the parent and refuses its epoch.
	s1.mu.Lock()
	delete(s1.held, parent.ID)
	s1.loadCode = codes.FailedPrecondition
	s1.mu.Unlock()
	auditNow(m)
	waitFor(t, 20*time.Second, func() (bool, string) {
		ts := c.tablets("t")
		return len(ts) == 1 && ts[0].Epoch > parent.Epoch, fmt.Sprintf("%+v", ts)
	})
	// The split arrives now: too late.
	if err := meta.CommitSplit(context.Background(), c.cli, c.layout, parent.ModRevision, parent.TabletRecord, left, right); !errors.Is(err, meta.ErrConflict) {
		t.Fatalf("a split arriving after the master reassigned its parent: %v, want ErrConflict", err)
	}
	s1.mu.Lock()
	s1.loadCode = codes.OK
	s1.mu.Unlock()
	waitAllLoaded(t, c, "t", 1, s1)
}
