package master

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tabuladb/tabula/meta"
)

// TestMeasureListServers is a measurement, not a check (it runs only with
// LISTSERVERS_MEASURE=<tablets>): on embedded etcd holding that many
// tablet records on three servers, the time of ListServers' two ways of
// counting each server's tablets, alternated 20 times: a snapshot of the
// whole map (readSnapshot, counts) and the tablet index
// (indexedServerCounts). docs/BENCHMARKS.md quotes it.
func TestMeasureListServers(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("LISTSERVERS_MEASURE"))
	if n <= 0 {
		t.Skip("set LISTSERVERS_MEASURE=<tablets> to measure")
	}
	c := newEtcdCluster(t)
	ctx := context.Background()
	servers := []string{"s1", "s2", "s3"}
	for i, id := range servers {
		rec := meta.ServerRecord{ID: id, Address: fmt.Sprintf("127.0.0.1:%d", 1+i), Lease: int64(100 + i)}
		c.put(c.layout.ServerKey(id), meta.EncodeServer(rec))
	}
	const perTable, perTxn = 100, 100
	var ops []clientv3.Op
	flush := func() {
		if _, err := c.cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
		ops = ops[:0]
	}
	for i := 0; i < n; i++ {
		table := fmt.Sprintf("t%05d", i/perTable)
		if i%perTable == 0 {
			ops = append(ops, clientv3.OpPut(c.layout.TableKey(table), meta.EncodeTable(meta.TableRecord{Schema: schema(table, "cf")})))
		}
		srv := i % len(servers)
		rec := meta.TabletRecord{Table: table, ID: fmt.Sprintf("%06d", i), State: meta.StateAssigned, Server: servers[srv],
			Address: fmt.Sprintf("127.0.0.1:%d", 1+srv), Lease: int64(100 + srv), Epoch: 1}
		if k := i % perTable; k > 0 {
			rec.Start = fmt.Appendf(nil, "%05d", k)
		}
		if k := i%perTable + 1; k < perTable && i+1 < n {
			rec.End = fmt.Appendf(nil, "%05d", k)
		}
		ops = append(ops, clientv3.OpPut(c.layout.TabletKey(table, rec.ID), meta.EncodeTablet(rec)))
		if len(ops) >= perTxn {
			flush()
		}
	}
	if len(ops) > 0 {
		flush()
	}
	m := &Master{cli: c.cli, layout: c.layout, log: testLogger(t), index: c.startIndex(1000)}
	waitFor(t, time.Minute, func() (bool, string) { return m.index.Rev() != 0, "the index is built" })
	mustSync(t, m.index)
	var snapTimes, indexTimes []time.Duration
	for range 20 {
		start := time.Now()
		snap, err := m.readSnapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		a := snap.counts()
		snapTimes = append(snapTimes, time.Since(start))
		start = time.Now()
		_, b, ok := m.indexedServerCounts(ctx)
		indexTimes = append(indexTimes, time.Since(start))
		if !ok || fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("counts: snapshot %v, index %v (ok %v)", a, b, ok)
		}
	}
	med := func(ds []time.Duration) time.Duration { slices.Sort(ds); return ds[len(ds)/2] }
	t.Logf("%d tablets: counting from a snapshot %v, from the index %v (medians of 20, alternated)", n, med(snapTimes), med(indexTimes))
}
