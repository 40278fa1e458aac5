package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyIngestThenCheck runs `tabula verify ingest` against the dev
// cluster, then `tabula verify check`, which must pass; then it deletes
// one acknowledged list row and puts one row nobody wrote, and check must
// fail naming both.
func TestVerifyIngestThenCheck(t *testing.T) {
	const table = "verifycli"
	hist := filepath.Join(t.TempDir(), "h.jsonl")
	out := ok(t, "verify", "ingest", "--table", table, "--history", hist, "--duration", "3s",
		"--writers", "2", "--counter-writers", "2", "--chain-writers", "2")
	if !strings.Contains(out, "ingest done: list") {
		t.Fatalf("ingest output:\n%s", out)
	}
	out = ok(t, "verify", "check", "--table", table, "--history", hist)
	if !strings.Contains(out, "violations: none") {
		t.Fatalf("check output:\n%s", out)
	}

	ok(t, "delete", "verifycli", firstAckedListRow(t, hist))
	ok(t, "put", "verifycli", "00000000deadbeef", "l:prev=", "--timestamp", "1")
	r := fails(t, []string{"verify", "check", "--table", table, "--history", hist}, "verification failed")
	for _, want := range []string{"[lost] acknowledged list write", "[phantom] row \"00000000deadbeef\""} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("check output lacks %q:\n%s", want, r.stdout)
		}
	}
	if r.code != 1 {
		t.Errorf("check exit status %d, want 1", r.code)
	}
	// A table that does not exist is an error, not an endless retry.
	fails(t, []string{"verify", "check", "--table", "verifynosuch", "--history", hist}, "verifynosuch")
}

// firstAckedListRow finds, in a history file, the row of the first list
// write that was acknowledged.
func firstAckedListRow(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[int64]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rec struct {
			T   string `json:"t"`
			ID  int64  `json:"id"`
			K   string `json:"k"`
			Row string `json:"row"`
			Out string `json:"out"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		switch {
		case rec.T == "call" && rec.K == "list":
			rows[rec.ID] = rec.Row
		case rec.T == "ret" && rec.Out == "ack" && rows[rec.ID] != "":
			return rows[rec.ID]
		}
	}
	t.Fatal("no acknowledged list write in the history")
	return ""
}
