package master

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/sharedlog"
)

// TestGCRemovesOnlyLogsNobodyNeeds: a shared commit log stays while its
// server's lease lives, while a kept tablet's manifest names it, while it is
// young, and when its name is not a server log's; otherwise it goes.
func TestGCRemovesOnlyLogsNobodyNeeds(t *testing.T) {
	e := newGCEnv(t, Options{})
	ctx := context.Background()
	g, err := e.c.cli.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	rec := meta.ServerRecord{ID: "ts-live", Address: "127.0.0.1:1", StartTime: 1, Lease: int64(g.ID)}
	if _, err := e.c.cli.Put(ctx, e.c.layout.ServerKey("ts-live"), meta.EncodeServer(rec), clientv3.WithLease(g.ID)); err != nil {
		t.Fatal(err)
	}
	logDir := func(name string) string { return sharedlog.Dir(e.root, name) }
	live := meta.LogName(int64(g.ID), 1)
	named := meta.LogName(int64(g.ID)+1, 1)
	dead := meta.LogName(int64(g.ID)+2, 1)
	young := meta.LogName(int64(g.ID)+3, 1)
	foreign := "not-a-server-log"
	for _, name := range []string{live, named, dead, young, foreign} {
		orphan(t, logDir(name))
	}
	// A live tablet whose manifest names one dead server's log.
	e.putTablet("t", "a", "", "")
	if err := os.MkdirAll(e.dir("t", "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := manifest.SaveEpoch(nil, e.dir("t", "a"), 3, manifest.State{NextFileNum: 1, ReplayPoint: 1, Log: named}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{live, named, dead, foreign} {
		age(t, logDir(name), time.Hour)
	}

	res := e.sweep()
	wantExist(t, true, logDir(live), logDir(named), logDir(young), logDir(foreign))
	wantExist(t, false, logDir(dead))
	if len(res.removed) != 1 || res.removed[0] != logDir(dead) {
		t.Fatalf("removed %v, want only %s", res.removed, logDir(dead))
	}

	// The tablet moves on to a new owner's log: the old one is no longer
	// named, and goes at the next sweep.
	if err := manifest.SaveEpoch(nil, e.dir("t", "a"), 4, manifest.State{NextFileNum: 1, ReplayPoint: 1, Log: live}); err != nil {
		t.Fatal(err)
	}
	e.sweep()
	wantExist(t, false, logDir(named))
	wantExist(t, true, logDir(live))

	// A server whose lease is gone loses the protection of its lease.
	if _, err := e.c.cli.Revoke(ctx, g.ID); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(e.dir("t", "a")); err != nil {
		t.Fatal(err)
	}
	e.deleteTablet("t", "a")
	e.sweep()
	wantExist(t, false, logDir(live))
	wantExist(t, true, logDir(young), logDir(foreign))
}

// TestGCKeepsLogsWhenAManifestIsUnreadable: a manifest that cannot be read
// may name any log, so no log is deleted in that sweep.
func TestGCKeepsLogsWhenAManifestIsUnreadable(t *testing.T) {
	e := newGCEnv(t, Options{})
	dead := sharedlog.Dir(e.root, meta.LogName(77, 1))
	orphan(t, dead)
	age(t, dead, time.Hour)
	e.putTablet("t", "a", "", "")
	if err := os.MkdirAll(e.dir("t", "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir("t", "a"), "MANIFEST"), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.sweep()
	wantExist(t, true, dead)
}
