package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBackupScheduleCommands: backup schedule sets a table's policy,
// schedule list shows it with its next run, a replacement keeps one
// schedule per table, schedule delete removes it; bad input is refused
// naming the fix (docs/OPERATIONS.md "Scheduled backups"). The runs
// themselves are the master's tests' (TestBackupScheduleRunsEachSlotOnce
// AcrossFailover) and schedrun's.
func TestBackupScheduleCommands(t *testing.T) {
	devCluster(t)
	at := t.TempDir()
	ok(t, "table", "create", "bksched", "--family", "f")

	fails(t, []string{"backup", "schedule", "bksched", "--every", "24h", "--keep", "7d"}, "give --every (24h, 1d), --keep (7d) and --to")
	fails(t, []string{"backup", "schedule", "bksched", "--every", "daily", "--keep", "7d", "--to", at}, `--every "daily": want a duration (12h, 90m) or a number of days (7d)`)
	fails(t, []string{"backup", "schedule", "bksched", "--every", "1d", "--keep", "1h", "--to", at}, "give --keep of at least 24h0m0s")
	fails(t, []string{"backup", "schedule", "bksched", "--every", "10s", "--keep", "1h", "--to", at}, "below the minimum 1m0s")
	fails(t, []string{"backup", "schedule", "bksched", "--every", "1d", "--keep", "7d", "--to", "rel/dir"}, "give an absolute path on the masters' machines")
	fails(t, []string{"backup", "schedule", "nosuch", "--every", "1d", "--keep", "7d", "--to", at}, "table nosuch does not exist")

	out := ok(t, "backup", "schedule", "bksched", "--every", "1d", "--keep", "7d", "--to", at)
	if !strings.Contains(out, "table bksched is backed up every 24h0m0s to "+at+", each kept 168h0m0s") {
		t.Fatalf("backup schedule: %s", out)
	}
	ok(t, "backup", "schedule", "bksched", "--every", "12h", "--keep", "14d", "--to", at)
	var rows []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(ok(t, "backup", "schedule", "list", "-o", "json")), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		rows = append(rows, r)
	}
	n := 0
	for _, r := range rows {
		if r["table"] == "bksched" {
			n++
			if r["every"] != "12h0m0s" || r["keep"] != "336h0m0s" || r["location"] != at || r["next"] == "-" {
				t.Errorf("schedule list row %v", r)
			}
		}
	}
	if n != 1 {
		t.Fatalf("schedule list has %d rows of bksched, want 1: %v", n, rows)
	}
	ok(t, "backup", "schedule", "delete", "bksched")
	fails(t, []string{"backup", "schedule", "delete", "bksched"}, "table bksched has no backup schedule (`tabula backup schedule list` lists them)")
	if out := ok(t, "backup", "schedule", "list"); strings.Contains(out, "bksched") {
		t.Fatalf("schedule list after delete:\n%s", out)
	}
}
