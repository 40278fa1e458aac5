package tabletserver

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

// A tablet whose commit log fails leaves service at once and is released
// in etcd, so the next owner replays its log; the server's other tablets
// keep serving. Before, the failed tablet answered "commit log failed
// earlier" forever and held its memtable against the server's budget.
func TestFailedCommitLogTakesOnlyThatTabletOutOfService(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	ref1 := e.load(c, e.assign("t1", nil, []byte("m"), srv, 1))
	ref2 := e.load(c, e.assign("t2", []byte("m"), nil, srv, 1))
	if err := put(e.ctx, c, ref1, "flushed", set("cf", "q", 1, "v")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.FlushTablet(e.ctx, ref1); err != nil {
		t.Fatal(err)
	}
	if err := put(e.ctx, c, ref1, "logged", set("cf", "q", 1, "v")); err != nil {
		t.Fatal(err)
	}

	// The disk refuses the next log segment: something already sits
	// where it must be created.
	logDir := filepath.Join(e.root, "tables", "users", "t1", "log")
	ents, err := os.ReadDir(logDir)
	if err != nil || len(ents) == 0 {
		t.Fatalf("log folder: %v %v", ents, err)
	}
	names := make([]string, 0, len(ents))
	for _, en := range ents {
		names = append(names, en.Name())
	}
	slices.Sort(names)
	var last uint64
	if _, err := fmt.Sscanf(names[len(names)-1], "%d.log", &last); err != nil {
		t.Fatal(err)
	}
	blocker := filepath.Join(logDir, fmt.Sprintf("%016d.log", last+1))
	if err := os.Mkdir(blocker, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := c.FlushTablet(e.ctx, ref1); err == nil {
		t.Fatal("a flush whose log rotation failed succeeded")
	}

	eventually(t, 10*time.Second, "the failed tablet to be released", func() bool {
		rec := e.tablet("t1")
		return rec.State == meta.StateUnassigned && rec.Server == "" && srv.Failures() == 1
	})
	wantNotServing(t, "write to the failed tablet", put(e.ctx, c, ref1, "after", set("cf", "q", 1, "v")), "users", "t1")
	if err := put(e.ctx, c, ref2, "other", set("cf", "q", 1, "v")); err != nil {
		t.Fatalf("the server's other tablet stopped serving: %v", err)
	}

	// The disk recovers; the next owner (here: this server again, at a
	// new epoch) replays the log: nothing acknowledged is lost.
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	ref1 = e.load(c, e.assign("t1", nil, []byte("m"), srv, 2))
	rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref1})
	if err != nil || !slices.Equal(rowKeys(rows), []string{"flushed", "logged"}) {
		t.Fatalf("after the failure the tablet reads %v, %v; want flushed and logged", rowKeys(rows), err)
	}
}
