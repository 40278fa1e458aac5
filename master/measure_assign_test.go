package master

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// TestMeasureAssignCost is a measurement, not a check (it runs only with
// ASSIGN_MEASURE=<tablets>): the process CPU (master, fake servers and the
// in-memory etcd twin) from creating tables of that many tablets in total
// until every one is loaded, then over ASSIGN_IDLE (default 5s) of an idle
// cluster. docs/BENCHMARKS.md quotes it.
func TestMeasureAssignCost(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("ASSIGN_MEASURE"))
	if n <= 0 {
		t.Skip("set ASSIGN_MEASURE=<tablets> to measure")
	}
	idle := 5 * time.Second
	if d, err := time.ParseDuration(os.Getenv("ASSIGN_IDLE")); err == nil {
		idle = d
	}
	c := newCluster(t)
	m := c.startMaster(Options{})
	s1, s2, s3 := c.startServer("s1"), c.startServer("s2"), c.startServer("s3")
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	const perTable = 100
	cpu0 := cpuTime()
	start := time.Now()
	var tables []string
	for i := 0; i < n; i += perTable {
		name := fmt.Sprintf("t%05d", i/perTable)
		tables = append(tables, name)
		k := min(perTable, n-i)
		if _, err := mc.CreateTable(context.Background(), &tabulapb.CreateTableRequest{Schema: schema(name, "cf"), SplitKeys: splitKeysForMeasure(k)}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Minute)
	for {
		loaded := 0
		for _, name := range tables {
			for _, tb := range c.tablets(name) {
				for _, s := range []*fakeServer{s1, s2, s3} {
					if s.id == tb.Server && s.holds()[tb.ID] == tb.Epoch {
						loaded++
					}
				}
			}
		}
		if loaded == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d tablets loaded", loaded, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	loadCPU, loadWall := cpuTime()-cpu0, time.Since(start)
	cpu1 := cpuTime()
	time.Sleep(idle)
	idleCPU := cpuTime() - cpu1
	t.Logf("%d tablets: create→loaded %v wall, %v CPU; idle %.1f ms CPU per s over %v",
		n, loadWall.Round(time.Millisecond), loadCPU.Round(time.Millisecond),
		float64(idleCPU.Microseconds())/1000/idle.Seconds(), idle)
}

func splitKeysForMeasure(n int) [][]byte {
	var out [][]byte
	for i := 1; i < n; i++ {
		out = append(out, []byte(fmt.Sprintf("k%05d", i)))
	}
	return out
}
