package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestTopAndLoadColumns: under writes to one table, `tabula top --once`
// lists its tablet with its requests per second, `servers` and `table
// tablets` show the size and load columns, and a bad --by is a usage
// error.
func TestTopAndLoadColumns(t *testing.T) {
	ok(t, "table", "create", "toptest", "--family", "cf")
	waitTabletsAssigned(t, "toptest")
	deadline := time.Now().Add(40 * time.Second)
	var top string
	found := false
	for i := 0; !found && time.Now().Before(deadline); i++ {
		// Keep writing so that every load window has some.
		ok(t, "put", "toptest", fmt.Sprintf("row%03d", i), "cf:q=v")
		top = ok(t, "top", "--once", "--n", "100", "--output", "json")
		for _, line := range strings.Split(strings.TrimSpace(top), "\n") {
			var r map[string]any
			if json.Unmarshal([]byte(line), &r) != nil {
				continue
			}
			if r["table"] == "toptest" && r["requests/s"].(float64) > 0 && r["writes/s"].(float64) > 0 {
				found = true
			}
		}
	}
	if !found {
		t.Fatalf("top never showed toptest with writes:\n%s", top)
	}
	text := ok(t, "top", "--once", "--by", "size")
	for _, w := range []string{"hottest tablets by size", "load report of", "REQUESTS/S", "SSTABLES"} {
		if !strings.Contains(text, w) {
			t.Errorf("top text lacks %q:\n%s", w, text)
		}
	}
	if s := ok(t, "servers"); !strings.Contains(s, "SIZE") || !strings.Contains(s, "BUSY") || !strings.Contains(s, "WRITES/S") {
		t.Errorf("servers lacks the load columns:\n%s", s)
	}
	if s := ok(t, "table", "tablets", "toptest"); !strings.Contains(s, "SSTABLES") || !strings.Contains(s, "BYTES/S") {
		t.Errorf("table tablets lacks the load columns:\n%s", s)
	}
	if r := tabula(t, "top", "--once", "--by", "colour"); r.code != 2 {
		t.Errorf("top --by colour: exit %d, want 2 (usage)", r.code)
	}
}
