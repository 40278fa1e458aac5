package tabletserver

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/internal/testkit"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/storepath"
	"github.com/tabuladb/tabula/vfs"
)

// A shared commit log that fails takes the tablets writing to it out of
// service at once; they are released in etcd, and the next owner (here the
// same server, which starts a new log) replays the failed log: nothing
// acknowledged is lost. Before, a failed tablet answered "commit log failed
// earlier" forever and held its memtable against the server's budget.
func TestFailedCommitLogTakesItsTabletsOutOfService(t *testing.T) {
	e := newEnv(t)
	disk := vfs.NewFaulty(nil)
	srv := e.start(func(o *Options) { o.FS = disk })
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

	// The disk fails the log's next write (and fsync).
	logs := storepath.Logs(e.root) + string(filepath.Separator)
	disk.Set(func(op vfs.Op, name string) error {
		if (op == vfs.OpWrite || op == vfs.OpSync) && strings.HasPrefix(name, logs) {
			return vfs.Failf("fsync of %s", name)
		}
		return nil
	})
	testkit.WantCode(t, "a write whose log write failed", put(e.ctx, c, ref1, "lost", set("cf", "q", 1, "v")), codes.Unavailable, "")
	testkit.WantCode(t, "a write to the failed log", put(e.ctx, c, ref2, "refused", set("cf", "q", 1, "v")), codes.Unavailable, "")
	disk.Set(nil)

	eventually(t, 10*time.Second, "the failed tablets to be released", func() bool {
		r1, r2 := e.tablet("t1"), e.tablet("t2")
		return r1.State == meta.StateUnassigned && r2.State == meta.StateUnassigned && srv.Failures() == 2
	})
	wantNotServing(t, "write to the failed tablet", put(e.ctx, c, ref1, "after", set("cf", "q", 1, "v")), "users", "t1")

	// The next owner (here: this server again, at a new epoch, on a new
	// log) replays the failed log: nothing acknowledged is lost.
	ref1 = e.load(c, e.assign("t1", nil, []byte("m"), srv, 2))
	rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref1})
	if err != nil || !slices.Equal(rowKeys(rows), []string{"flushed", "logged"}) {
		t.Fatalf("after the failure the tablet reads %v, %v; want flushed and logged", rowKeys(rows), err)
	}
}
