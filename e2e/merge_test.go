package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/meta"
)

// tabulaCLI runs the tabula binary against the cluster's masters (as the
// admin on a secured cluster) and returns its output.
func (c *cluster) tabulaCLI(t *testing.T, args ...string) string {
	t.Helper()
	full := append([]string{"--master", strings.Join(c.masterAddrs(), ","), "--timeout", "2m"}, args...)
	if c.sec != nil {
		full = append(full, "--tls-ca", c.sec.pki.CA, "--token", c.sec.token)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, full...)
	cmd.SysProcAttr = procAttr()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tabula %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// mergeRows writes n rows under each prefix and returns them.
func mergeRows(t *testing.T, tbl *client.Table, prefixes []string, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var rows []string
	for _, p := range prefixes {
		for i := range n {
			row := fmt.Sprintf("%s%04d", p, i)
			if err := tbl.Apply(ctx, []byte(row), rowMutation(row)); err != nil {
				t.Fatalf("writing %s: %v", row, err)
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// checkRows reads every row of tbl and checks it holds exactly rows, each
// with its two cells.
func checkRows(t *testing.T, what string, tbl *client.Table, rows []string) {
	t.Helper()
	got := scanAll(t, tbl)
	if len(got) != len(rows) {
		t.Fatalf("%s: %d rows readable, want %d", what, len(got), len(rows))
	}
	for i, r := range got {
		if string(r.Key) != rows[i] {
			t.Fatalf("%s: row %d is %q, want %q", what, i, r.Key, rows[i])
		}
		if len(r.Cells) != 2 || !bytes.Equal(r.Cells[0].Value, valueOf(famA, rows[i])) || !bytes.Equal(r.Cells[1].Value, valueOf(famB, rows[i])) {
			t.Fatalf("%s: row %s reads %v", what, rows[i], r.Cells)
		}
	}
}

func tabletCount(t *testing.T, cl *client.Client, table string) []client.TabletInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	ts, err := cl.Admin().Tablets(ctx, table)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// TestMergeByOperatorAutomaticallyAndAcrossKill: a table pre-split by the
// user is merged by `tabula table merge` (across its user split keys: the
// operator said so) and never by the automatic merge; a table whose
// schema records no user split keys (as one created by an older release)
// is merged automatically once small and cold; then a tablet server is
// killed with -9 right after a merge. Every cell stays readable throughout.
func TestMergeByOperatorAutomaticallyAndAcrossKill(t *testing.T) {
	slow(t)
	c := startCluster(t, clusterOptions{masters: 1, servers: 2, masterArgs: []string{
		"--auto-merge-interval", "1s", "--auto-merge-window", "3s", "--auto-merge-split-cooldown", "3s", "--auto-merge-max-rps", "100",
	}})
	cl := c.newClient(t)
	createTable(t, c, cl, "user", []string{"b", "d", "f", "h"})
	createTable(t, c, cl, "auto", []string{"b", "d", "f", "h"})
	prefixes := []string{"a", "c", "e", "g", "i"}
	user, auto := cl.Open("user"), cl.Open("auto")
	userRows, autoRows := mergeRows(t, user, prefixes, 40), mergeRows(t, auto, prefixes, 40)

	// The "auto" table forgets its user split keys, as a table created
	// before they were recorded.
	ecli := c.etcdClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	l := meta.NewLayout(clusterKey)
	rec, rev, err := meta.GetTable(ctx, ecli, l, "auto")
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Schema.UserSplitKeys) != 4 {
		t.Fatalf("table auto records user split keys %q, want the 4 it was created with", rec.Schema.UserSplitKeys)
	}
	rec.Schema.UserSplitKeys = nil
	resp, err := ecli.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(l.TableKey("auto")), "=", rev)).
		Then(clientv3.OpPut(l.TableKey("auto"), meta.EncodeTable(rec))).
		Commit()
	if err != nil || !resp.Succeeded {
		t.Fatalf("clearing the user split keys of table auto: %v", err)
	}

	// The operator merges [b, f) of "user" across the user key d.
	out := c.tabulaCLI(t, "table", "merge", "user", "b", "f")
	t.Logf("tabula table merge user b f: %s", strings.TrimSpace(out))
	ts := tabletCount(t, cl, "user")
	if len(ts) != 4 || string(ts[1].Start) != "b" || string(ts[1].End) != "f" {
		t.Fatalf("user tablets after the operator's merge:\n%s", formatTablets(ts))
	}
	checkRows(t, "after the operator's merge", user, userRows)

	// The automatic merge folds "auto" into one tablet and leaves "user"
	// alone (every boundary it has left is a user split key).
	deadline := time.Now().Add(90 * time.Second)
	for len(tabletCount(t, cl, "auto")) > 1 {
		if time.Now().After(deadline) {
			t.Fatalf("auto still has these tablets after 90s:\n%s", formatTablets(tabletCount(t, cl, "auto")))
		}
		time.Sleep(500 * time.Millisecond)
	}
	if ts := tabletCount(t, cl, "user"); len(ts) != 4 {
		t.Fatalf("the automatic merge crossed user split keys:\n%s", formatTablets(ts))
	}
	checkRows(t, "after the automatic merges", auto, autoRows)

	// Merge [f, end) of "user" and kill -9 the server that serves the
	// result at once: its successor opens the merged tablet from its
	// manifest, which references the parents' files.
	c.tabulaCLI(t, "table", "merge", "user", "f", "")
	ts = c.waitAssigned(t, cl, "user", 30*time.Second)
	victim := c.server(ts[len(ts)-1].Server)
	t.Logf("kill -9 %s, which serves the merged tablet %s [%q, %q)", victim.name, ts[len(ts)-1].ID, ts[len(ts)-1].Start, ts[len(ts)-1].End)
	victim.kill()
	ts = c.waitAssigned(t, cl, "user", 60*time.Second)
	if len(ts) != 3 {
		t.Fatalf("user tablets after the kill:\n%s", formatTablets(ts))
	}
	checkRows(t, "user after kill -9 of the merged tablet's server", user, userRows)
	checkRows(t, "auto after kill -9", auto, autoRows)
}
