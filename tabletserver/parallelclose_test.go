package tabletserver

import (
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/tabletserver/tablet"
	"github.com/tabuladb/tabula/vfs"
)

// closeRig is a server on a faulty disk holding tablets "a" [, m) and
// "b" [m, ), each with one row written and not flushed.
type closeRig struct {
	e    *env
	srv  *Server
	disk *vfs.Faulty
	tabs map[string]*tablet.Tablet // by tablet id
}

func newCloseRig(t *testing.T) *closeRig {
	e := newEnv(t)
	disk := vfs.NewFaulty(nil)
	srv := e.start(func(o *Options) { o.FS = disk; o.DisableBackgroundWork = true })
	c := e.dial(srv)
	r := &closeRig{e: e, srv: srv, disk: disk, tabs: map[string]*tablet.Tablet{}}
	for _, tb := range []struct{ id, start, end, row string }{{"a", "", "m", "alice"}, {"b", "m", "", "mallory"}} {
		ref := e.load(c, e.assign(tb.id, nilIfEmpty([]byte(tb.start)), nilIfEmpty([]byte(tb.end)), srv, 1))
		if err := put(e.ctx, c, ref, tb.row, set("cf", "q", 1, "v-"+tb.id)); err != nil {
			t.Fatal(err)
		}
		srv.mu.Lock()
		r.tabs[tb.id] = srv.tablets[tabletKey("users", tb.id)].t
		srv.mu.Unlock()
	}
	return r
}

// tabletOf returns the id of the tablet whose folder holds name, if any.
func (r *closeRig) tabletOf(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, filepath.Join(r.e.root, "tables", r.e.schema.Name)+string(filepath.Separator))
	if !ok {
		return "", false
	}
	id, _, _ := strings.Cut(rest, string(filepath.Separator))
	return id, true
}

// flushed fails unless tablet id's folder has SSTables in its manifest.
func (r *closeRig) flushed(t *testing.T, id string) {
	t.Helper()
	st, _, err := manifest.Load(nil, r.srv.tabletDir("users", id))
	if err != nil || len(st.Files) == 0 {
		t.Fatalf("tablet %s's manifest: %d files, %v; want it flushed", id, len(st.Files), err)
	}
}

// readsBack reopens tablet id as its next owner would and fails unless
// it reads its row back, having replayed writes from the log exactly
// when replay says.
func (r *closeRig) readsBack(t *testing.T, id, row string, replay bool) {
	t.Helper()
	tb, replayed := reopen(t, r.e, r.srv.tabletDir("users", id))
	if (replayed > 0) != replay {
		t.Fatalf("reopening tablet %s replayed %d writes from the log, want replay %v", id, replayed, replay)
	}
	cells, err := tb.ReadRow(r.e.ctx, []byte(row), nil)
	if err != nil || len(cells) != 1 || string(cells[0].Value) != "v-"+id {
		t.Fatalf("tablet %s reopened reads %v, %v", id, cells, err)
	}
}

// Close flushes and closes several tablets at once: while one tablet's
// flush is held on the disk, another one is flushed and closed. One by
// one, the second waited for the first.
func TestOneTabletsFlushDoesNotHoldUpAnotherAtClose(t *testing.T) {
	r := newCloseRig(t)
	held, release := make(chan string, 1), make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before the server's Close, which cleanups run after
	var claimed atomic.Bool
	r.disk.Set(func(op vfs.Op, name string) error {
		// The first tablet to write a file (its flush's) waits.
		if id, ok := r.tabletOf(name); ok && op == vfs.OpCreate && claimed.CompareAndSwap(false, true) {
			held <- id
			<-release
		}
		return nil
	})
	closed := make(chan error, 1)
	go func() { closed <- r.srv.Close() }()
	first := <-held
	other := map[string]string{"a": "b", "b": "a"}[first]
	eventually(t, 30*time.Second, "tablet "+other+" closed while "+first+"'s flush is held", r.tabs[other].Closed)
	r.flushed(t, other)
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while tablet %s's flush was held", err, first)
	default:
	}
	if r.tabs[first].Closed() {
		t.Fatalf("tablet %s closed while its flush was held", first)
	}
	free()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	r.readsBack(t, "a", "alice", false)
	r.readsBack(t, "b", "mallory", false)
}

// A tablet whose flush fails at Close is named in Close's error and still
// closed, its writes left in the log for the next owner; the other
// tablets are flushed and closed.
func TestCloseReportsAFailedFlushAndClosesTheOthers(t *testing.T) {
	r := newCloseRig(t)
	boom := errors.New("disk full")
	r.disk.Set(func(op vfs.Op, name string) error {
		if id, ok := r.tabletOf(name); ok && id == "a" && op == vfs.OpCreate {
			return boom
		}
		return nil
	})
	err := r.srv.Close()
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "flushing tablet users/a:") {
		t.Fatalf("Close: %v; want tablet users/a's flush failure", err)
	}
	if strings.Contains(err.Error(), "users/b") {
		t.Fatalf("Close: %v; tablet users/b did not fail", err)
	}
	for id, tb := range r.tabs {
		if !tb.Closed() {
			t.Errorf("tablet %s left open", id)
		}
	}
	r.flushed(t, "b")
	r.readsBack(t, "a", "alice", true)
	r.readsBack(t, "b", "mallory", false)
}

// An abandon (the lease is gone) closes the tablets several at once, as
// Close does: with a flush of each tablet held on the disk, each one's
// Close has begun (it waits for its flush) before either flush ends. One
// by one, the second Close began only after the first ended.
func TestAbandonClosesTabletsAtOnce(t *testing.T) {
	r := newCloseRig(t)
	held, release := make(chan string, len(r.tabs)), make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	var seen sync.Map
	r.disk.Set(func(op vfs.Op, name string) error {
		if id, ok := r.tabletOf(name); ok && op == vfs.OpCreate {
			if _, dup := seen.LoadOrStore(id, true); !dup {
				held <- id
			}
			<-release
		}
		return nil
	})
	var flushes sync.WaitGroup
	for _, tb := range r.tabs {
		flushes.Go(func() { tb.Flush(r.e.ctx) }) // fails once abandoned: the guard refuses its manifest
	}
	for range r.tabs {
		<-held
	}
	abandoned := make(chan struct{})
	go func() {
		r.srv.abandon("test")
		close(abandoned)
	}()
	eventually(t, 30*time.Second, "both tablets' Close begun while their flushes are held", func() bool {
		return r.tabs["a"].Closed() && r.tabs["b"].Closed()
	})
	free()
	<-abandoned
	flushes.Wait()
}
