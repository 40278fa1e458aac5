package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCLIBalancer drives the balancing commands against the dev cluster:
// the per-table and cluster switches and status, a tablet move, and a dry
// run; a wrong argument is a usage error.
func TestCLIBalancer(t *testing.T) {
	ok(t, "table", "create", "baltest", "--family", "cf", "--splits", "m")
	waitTabletsAssigned(t, "baltest")
	defer ok(t, "balancer", "on")

	if out := ok(t, "balancer", "off", "--table", "baltest"); !strings.Contains(out, "balancer off for table baltest") {
		t.Errorf("balancer off --table: %q", out)
	}
	if out := ok(t, "balancer", "status", "--table", "baltest"); !strings.Contains(out, "baltest: off") {
		t.Errorf("status --table: %q", out)
	}
	var st struct {
		Enabled        bool
		DisabledTables []string
	}
	if err := json.Unmarshal([]byte(ok(t, "balancer", "status", "-o", "json")), &st); err != nil || !st.Enabled || !strings.Contains(strings.Join(st.DisabledTables, ","), "baltest") {
		t.Errorf("status -o json: %+v, %v", st, err)
	}
	ok(t, "balancer", "on", "--table", "baltest")
	ok(t, "balancer", "off")
	if out := ok(t, "balancer", "status"); !strings.Contains(out, "balancer: off") || !strings.Contains(out, "interval: 15s") {
		t.Errorf("status after off:\n%s", out)
	}

	// Move the first tablet to a server that does not hold it.
	var tab struct{ ID, Server string }
	line := strings.SplitN(strings.TrimSpace(ok(t, "table", "tablets", "baltest", "-o", "json")), "\n", 2)[0]
	if err := json.Unmarshal([]byte(line), &tab); err != nil {
		t.Fatalf("tablets line %q: %v", line, err)
	}
	to := "ts-1"
	if tab.Server == to {
		to = "ts-2"
	}
	if out := ok(t, "tablet", "move", "baltest", tab.ID, to); !strings.Contains(out, "is assigned to "+to) {
		t.Errorf("tablet move: %q", out)
	}
	if out := ok(t, "balancer", "status"); !strings.Contains(out, tab.ID) || !strings.Contains(out, "operator") {
		t.Errorf("status lacks the operator's move:\n%s", out)
	}
	fails(t, []string{"tablet", "move", "baltest", tab.ID, "ts-9"}, "ts-9")
	if out := ok(t, "balance", "--dry-run"); !strings.Contains(out, "dry run:") {
		t.Errorf("balance --dry-run: %q", out)
	}
	fails(t, []string{"balancer", "sideways"}, "on, off or status")
}
