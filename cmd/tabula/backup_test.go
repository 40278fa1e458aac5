package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// backupJSON runs backup create with -o json under env and decodes it.
func backupJSON(t *testing.T, env []string, args ...string) (map[string]any, result) {
	t.Helper()
	env = append(append([]string{"TABULA_MASTER=" + devCluster(t)}, devSecurityEnv(t)...), env...)
	r := tabulaEnv(t, env, append([]string{"backup", "create"}, append(args, "-o", "json")...)...)
	var out map[string]any
	if r.code == 0 {
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("backup create -o json: %v\n%s", err, r.stdout)
		}
	}
	return out, r
}

// TestBackupCommands: tabula backup create killed with SIGKILL after its
// first copied file (TABULA_BACKUP_TEST_KILL_AFTER) leaves a backup list
// shows unfinished; run again it completes that backup without copying
// the finished file again, and deletes the snapshot it took; a third run
// copies nothing; verify passes, then names a damaged file and exits
// non-zero; restore makes a table that scans as the source did; delete
// --expired deletes the backup whose --expire passed, and deleting the
// other empties the location (docs/CONTRACTS.md §7).
func TestBackupCommands(t *testing.T) {
	devCluster(t)
	storage := filepath.Join(dev.dir, "data")
	at := t.TempDir()
	ok(t, "table", "create", "bkcli", "--family", "f", "--splits", "m")
	for _, row := range []string{"a1", "b2", "k3", "n4", "x5", "z6"} {
		ok(t, "put", "bkcli", row, "f:q="+row, "--timestamp", "7")
	}
	want := ok(t, "scan", "bkcli", "-o", "json")
	create := []string{"bkcli", "--to", at, "--storage", storage, "--workers", "1"}

	_, r := backupJSON(t, []string{backupKillAfterEnv + "=1"}, create...)
	if r.code == 0 {
		t.Fatalf("the backup told to kill itself after one file finished: %s", r.stdout)
	}
	if out := ok(t, "backup", "list", "--at", at); !strings.Contains(out, "unfinished") || !strings.Contains(out, "bkcli") {
		t.Fatalf("backup list after a killed backup:\n%s", out)
	}
	done, r := backupJSON(t, nil, create...)
	if r.code != 0 {
		t.Fatalf("backup create after the kill: exit %d\n%s", r.code, r.stderr)
	}
	files := done["files"].(float64)
	if done["resumed_files"].(float64) != 1 || done["copied_files"].(float64) != files-1 || done["resumed_backup"] == "" || files < 2 {
		t.Fatalf("the rerun after a kill after 1 file: %v; want 1 file resumed, the other %v copied", done, files-1)
	}
	again, r := backupJSON(t, nil, append(create, "--expire", "1ms")...)
	if r.code != 0 || again["copied_files"].(float64) != 0 || again["present_files"].(float64) != files {
		t.Fatalf("a backup of the unchanged table: %v (exit %d %s)", again, r.code, r.stderr)
	}
	if out := ok(t, "snapshot", "list", "bkcli"); strings.Contains(out, "backup-") {
		t.Fatalf("the backups left their snapshots:\n%s", out)
	}
	list := ok(t, "backup", "list", "--at", at)
	if strings.Contains(list, "unfinished") || strings.Count(list, "complete") != 2 {
		t.Fatalf("backup list:\n%s", list)
	}
	name := done["name"].(string)
	if out := ok(t, "backup", "describe", name, "--at", at); !strings.Contains(out, "tablets: 2") {
		t.Fatalf("describe:\n%s", out)
	}
	ok(t, "backup", "verify", name, "--at", at)

	ok(t, "backup", "restore", "--from", filepath.Join(at, name), "bkcli_restored")
	if got := ok(t, "scan", "bkcli_restored", "-o", "json"); got != want {
		t.Fatalf("the restored table scans\n%s\nwant\n%s", got, want)
	}
	fails(t, []string{"backup", "restore", "--from", filepath.Join(at, name), "bkcli_restored"}, "exists")

	ssts, _ := filepath.Glob(filepath.Join(at, "files", "bkcli", "*", "f", "*.sst"))
	if len(ssts) == 0 {
		t.Fatal("no SSTable in the backup location")
	}
	b, err := os.ReadFile(ssts[0])
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0xff
	if err := os.WriteFile(ssts[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(filepath.Join(at, "files"), ssts[0])
	r = tabula(t, "backup", "verify", name, "--at", at)
	if r.code == 0 || !strings.Contains(r.stdout, "damaged: "+filepath.ToSlash(rel)) {
		t.Fatalf("verify of a damaged backup: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	if out := ok(t, "backup", "delete", "--expired", "--at", at); !strings.Contains(out, "deleted backup "+again["name"].(string)) || strings.Contains(out, name) {
		t.Fatalf("delete --expired deleted:\n%s\nwant %s (expired) only", out, again["name"])
	}
	ok(t, "backup", "delete", name, "--at", at)
	if left, _ := filepath.Glob(filepath.Join(at, "files", "bkcli", "*", "f", "*")); len(left) != 0 {
		t.Fatalf("files left after deleting every backup: %v", left)
	}
	fails(t, []string{"backup", "create", "bkcli", "--to", at}, "--storage")
	ok(t, "table", "delete", "bkcli")
	ok(t, "table", "delete", "bkcli_restored")
}
