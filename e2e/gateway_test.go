package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/bigtable"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tabuladb/tabula/internal/testkit/writers"
)

// startGateway runs `tabula gateway` for the cluster on a free port.
func (c *cluster) startGateway(t *testing.T) *proc {
	t.Helper()
	addr := freeAddr(t)
	p := &proc{name: "gateway", addr: addr, log: c.logPath("gateway")}
	p.args = []string{"gateway", "--master", c.masterAddrs()[0] + "," + c.masterAddrs()[1], "--listen", addr}
	if c.sec != nil {
		p.args = append(p.args, "--tls-ca", c.sec.pki.CA, "--token", c.sec.token)
	}
	p.start(t)
	waitListening(t, p, readyWait)
	return p
}

// TestBigtableClientRetriesThroughSplitsAndKills drives a cluster of real
// processes through the gateway with the official Go client while a
// tablet splits, a tablet server is killed (-9), and the gateway itself is
// killed and restarted on its address (so the client's own retries
// resume its scans and resend its MutateRows entries). Every acknowledged
// write is then read back exactly, and every scan that finished was in
// order, without duplicates, and held every row acknowledged before it
// began.
func TestBigtableClientRetriesThroughSplitsAndKills(t *testing.T) {
	slow(t)
	c := startCluster(t, clusterOptions{})
	gw := c.startGateway(t)
	t.Cleanup(func() {
		gw.kill()
		if t.Failed() {
			t.Logf("---- log of the gateway ----\n%s", gw.tail(80))
		}
	})

	conn, err := grpc.NewClient(gw.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	bt, err := bigtable.NewClientWithConfig(ctx, "p", "i", bigtable.ClientConfig{MetricsProvider: bigtable.NoopMetricsProvider{}}, option.WithGRPCConn(conn))
	if err != nil {
		t.Fatal(err)
	}
	defer bt.Close()
	adm, err := bigtable.NewAdminClient(ctx, "p", "i", option.WithGRPCConn(conn))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := adm.CreateTableFromConf(ctx, &bigtable.TableConf{TableID: "retries", SplitKeys: []string{"r2", "r5"},
		Families: map[string]bigtable.GCPolicy{"cf": bigtable.NoGcPolicy()}}); err != nil {
		t.Fatal(err)
	}
	tbl := bt.Open("retries")

	// Writers: MutateRows of 10 rows, explicit timestamps: idempotent, so
	// retried. A row's value is its key.
	ws := writers.Start(t, 3, func(w *writers.Writer, b int) bool {
		var rows []string
		var muts []*bigtable.Mutation
		for i := 0; i < 10; i++ {
			row := fmt.Sprintf("r%d/%d/%05d", i%8, w.N, b)
			m := bigtable.NewMutation()
			m.Set("cf", "v", 1000, []byte(row))
			rows, muts = append(rows, row), append(muts, m)
		}
		errs, err := tbl.ApplyBulk(ctx, rows, muts)
		if err != nil {
			t.Logf("writer %d: ApplyBulk: %v", w.N, err)
			return true
		}
		var applied []string
		for i, row := range rows {
			if errs == nil || errs[i] == nil { // nil errs: all applied
				applied = append(applied, row)
			}
		}
		w.Ack(applied...)
		return true
	})
	ackedRows := func() map[string]bool {
		out := map[string]bool{}
		for _, rows := range ws.Acked() {
			for _, r := range rows {
				out[r] = true
			}
		}
		return out
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var scans, scanErrs int
	wg.Add(1)
	go func() { // full scans, checked against what was acknowledged before each began
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			before := ackedRows()
			seen := map[string]bool{}
			last := ""
			err := tbl.ReadRows(ctx, bigtable.InfiniteRange(""), func(r bigtable.Row) bool {
				if r.Key() <= last || seen[r.Key()] {
					t.Errorf("scan: row %q after %q (out of order or again)", r.Key(), last)
				}
				seen[r.Key()], last = true, r.Key()
				return true
			})
			if err != nil {
				scanErrs++
				t.Logf("scan: %v", err)
				continue
			}
			scans++
			for r := range before {
				if !seen[r] {
					t.Errorf("scan %d missed %s, acknowledged before it began", scans, r)
				}
			}
		}
	}()

	tc := c.newClient(t)
	waitAcked := func(n int) {
		deadline := time.Now().Add(time.Minute)
		for len(ackedRows()) < n && time.Now().Before(deadline) && !t.Failed() {
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitAcked(300)
	if err := tc.Admin().SplitTablet(ctx, "retries", []byte("r3")); err != nil {
		t.Errorf("split: %v", err)
	}
	waitAcked(len(ackedRows()) + 300)
	victim := c.servers[0]
	victim.kill()
	t.Logf("killed %s", victim.id)
	waitAcked(len(ackedRows()) + 300)
	gw.kill()
	t.Logf("killed the gateway")
	time.Sleep(300 * time.Millisecond) // calls in flight fail and retry meanwhile
	gw.start(t)
	waitListening(t, gw, readyWait)
	waitAcked(len(ackedRows()) + 300)
	ws.Stop()
	close(stop)
	wg.Wait()

	if scans < 3 {
		t.Errorf("only %d scans finished (%d failed)", scans, scanErrs)
	}
	got := map[string]string{}
	if err := tbl.ReadRows(ctx, bigtable.InfiniteRange(""), func(r bigtable.Row) bool {
		got[r.Key()] = string(r["cf"][0].Value)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	acked := ackedRows()
	for row := range acked {
		if got[row] != row {
			t.Errorf("acknowledged %s = %q, read back %q", row, row, got[row])
		}
	}
	t.Logf("%d rows acknowledged, %d read back; %d full scans during splits and kills (%d failed)", len(acked), len(got), scans, scanErrs)
}
