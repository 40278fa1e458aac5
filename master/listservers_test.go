package master

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta/faultstore"
)

// ListServers counts each server's tablets in the tablet index, not in a
// read of the whole tablet map (a status page asks on every view): with
// every such read failing, it still answers, and right.
func TestListServersCountsTabletsInTheIndex(t *testing.T) {
	c := newCluster(t)
	fs := faultstore.New(c.cli)
	c.cli = fs
	m := c.startMaster(Options{BalanceInterval: time.Hour, LoadInterval: -1})
	s1 := c.startServer("s1")
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	createOn(t, c, m, mc, "t", 6, s1)
	s2 := c.startServer("s2")
	waitFor(t, 10*time.Second, func() (bool, string) {
		ss, err := mc.ListServers(context.Background(), &tabulapb.ListServersRequest{})
		return err == nil && len(ss.GetServers()) == 2, "both servers listed"
	})

	prefix := c.layout.AllTabletsPrefix()
	fs.FailTxn(func(then []clientv3.Op) bool {
		for _, op := range then {
			if op.IsGet() && strings.HasPrefix(string(op.KeyBytes()), prefix) {
				return true
			}
		}
		return false
	}, faultstore.BeforeCommit, 1<<30)
	ss, err := mc.ListServers(context.Background(), &tabulapb.ListServersRequest{})
	if err != nil {
		t.Fatalf("ListServers with reads of the tablet map failing: %v", err)
	}
	got := map[string]int32{}
	for _, s := range ss.GetServers() {
		got[s.GetId()] = s.GetTablets()
	}
	if len(got) != 2 || got[s1.id] != 6 || got[s2.id] != 0 {
		t.Fatalf("ListServers = %v, want s1 with 6 tablets and s2 with 0", got)
	}
}
