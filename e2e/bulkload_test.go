package e2e

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/client"
)

// TestKillTabletServerMidBulkLoad: kill -9 of a tablet server while a bulk
// load streams into its tablets. Each tablet's share of the load is then
// in the table whole or not at all (one manifest save publishes it), and
// the client carries the load on at the tablets' new owners: when BulkLoad
// returns nil every row is there. In half the runs (by the printed seed)
// the load is also given up at the kill, so that shares streaming into
// live servers are cut off too.
func TestKillTabletServerMidBulkLoad(t *testing.T) {
	slow(t)
	rng := newRand(t)
	c := startCluster(t, clusterOptions{})
	admin := c.newClient(t)
	const table = "bulk"
	createTable(t, c, admin, table, hexSplits)
	ts := c.waitAssigned(t, admin, table, 10*time.Second)
	victim, lost := pickVictim(t, c, ts, rng)

	// The kill comes after a random number of the load's messages have
	// been sent, so that it lands inside the load whatever the speed of
	// the machine: the loading client counts them.
	const messages = 36 // about 1 MiB each: the load below is 36 MB
	killAfter := 1 + rng.IntN(messages/2)
	// Half the runs give up at the kill (the load's context cancelled):
	// the shares in flight on every server must then leave nothing.
	giveUp := rng.IntN(2) == 0
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var sent atomic.Int64
	killed := make(chan struct{})
	var once sync.Once
	count := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		cs, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil || method != "/tabula.v1.BulkLoad/IngestRows" {
			return cs, err
		}
		return &countingStream{ClientStream: cs, sent: func() {
			if sent.Add(1) == int64(killAfter) {
				once.Do(func() {
					victim.kill()
					if giveUp {
						cancel()
					}
					close(killed)
				})
			}
		}}, nil
	}
	opts := c.sec.clientOptions(c.masterAddrs())
	if opts.TLS == nil {
		opts.DialOptions = append(opts.DialOptions, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	opts.DialOptions = append(opts.DialOptions, grpc.WithChainStreamInterceptor(count))
	cctx, ccancel := context.WithTimeout(context.Background(), opTimeout)
	cl, err := client.NewClientWithOptions(cctx, opts)
	ccancel()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	tbl := cl.Open(table)

	const perPrefix = 10000
	var rows []client.Row
	for p := range 16 {
		for i := range perPrefix {
			key := fmt.Sprintf("%x/%06d", p, i)
			value := make([]byte, 200) // random: the files are as large as the load
			for j := range value {
				value[j] = byte(rng.IntN(256))
			}
			rows = append(rows, client.Row{Key: []byte(key), Cells: []cell.Cell{
				{Family: famA, Qualifier: []byte(qual), Timestamp: writeTS, Value: value},
			}})
		}
	}
	type outcome struct {
		st  client.BulkLoadStats
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		st, err := tbl.BulkLoad(ctx, rows)
		done <- outcome{st, err}
	}()
	res := <-done
	select {
	case <-killed:
		t.Logf("kill -9 %s holding %d tablets after %d of the load's messages (load given up at the kill: %v)", victim.name, len(lost), killAfter, giveUp)
	default:
		t.Fatalf("the load sent %d messages, fewer than the %d before the kill", sent.Load(), killAfter)
	}
	t.Logf("BulkLoad: %+v, %v", res.st, res.err)
	c.waitAssigned(t, admin, table, 30*time.Second)

	// Count the rows of each tablet's share as it was when the load began.
	got := make(map[string]int)
	rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
	defer rcancel()
	it := tbl.ReadRows(rctx, client.InfiniteRange(nil))
	for it.Next() {
		for _, tb := range ts {
			k := it.Row().Key
			if bytes.Compare(k, tb.Start) >= 0 && (len(tb.End) == 0 || bytes.Compare(k, tb.End) < 0) {
				got[tb.ID]++
			}
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	for _, tb := range ts {
		want := 0
		for _, r := range rows {
			if bytes.Compare(r.Key, tb.Start) >= 0 && (len(tb.End) == 0 || bytes.Compare(r.Key, tb.End) < 0) {
				want++
			}
		}
		switch n := got[tb.ID]; {
		case n == want:
		case n == 0 && res.err != nil:
		default:
			t.Errorf("tablet [%q, %q): %d of its share's %d rows after the kill (BulkLoad: %v); want all or none, and all when it succeeded", tb.Start, tb.End, n, want, res.err)
		}
	}
}

// countingStream calls sent after each message a client stream sends.
type countingStream struct {
	grpc.ClientStream
	sent func()
}

func (s *countingStream) SendMsg(m any) error {
	err := s.ClientStream.SendMsg(m)
	if err == nil {
		s.sent()
	}
	return err
}
