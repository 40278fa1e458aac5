package main

import (
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
)

// jsonCells parses --output json cell lines.
func jsonCells(t *testing.T, out string) []map[string]any {
	t.Helper()
	var cells []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var c map[string]any
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("line %q is not JSON: %v", line, err)
		}
		cells = append(cells, c)
	}
	return cells
}

// summary renders JSON cells as "row/family:qualifier@ts=value" strings.
func summary(t *testing.T, out string) []string {
	t.Helper()
	var s []string
	for _, c := range jsonCells(t, out) {
		s = append(s, c["row"].(string)+"/"+c["family"].(string)+":"+c["qualifier"].(string)+
			"@"+strconv.FormatInt(int64(c["timestamp"].(float64)), 10)+"="+c["value"].(string))
	}
	return s
}

func rowsOf(t *testing.T, out string) []string {
	var rows []string
	for _, c := range jsonCells(t, out) {
		if r := c["row"].(string); len(rows) == 0 || rows[len(rows)-1] != r {
			rows = append(rows, r)
		}
	}
	return rows
}

func wantList(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got  %q\n want %q", what, got, want)
	}
}

// waitTabletsAssigned waits until every tablet of table has a server and is not
// unassigned, and returns how many tablets there are.
func waitTabletsAssigned(t *testing.T, table string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := ok(t, "table", "tablets", table, "--output", "json")
		var n, ready int
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var tab map[string]any
			if json.Unmarshal([]byte(line), &tab) != nil {
				continue
			}
			n++
			if tab["server"] != "" && tab["address"] != "" && tab["state"] != "unassigned" {
				ready++
			}
		}
		if n > 0 && ready == n {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("tablets of %s not all assigned after 30s:\n%s", table, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestCLIAgainstDevCluster(t *testing.T) {
	servers := ok(t, "servers", "--output", "json")
	if n := len(jsonCells(t, servers)); n != 3 {
		t.Fatalf("servers: %d lines, want 3:\n%s", n, servers)
	}
	for _, id := range []string{"ts-1", "ts-2", "ts-3"} {
		if !strings.Contains(servers, `"`+id+`"`) {
			t.Errorf("servers lacks %s:\n%s", id, servers)
		}
	}

	ok(t, "table", "create", "users", "--family", "profile:versions=3", "--family", "log:versions=2,compression=zstd", "--family", "recent:ttl=7d", "--splits", "g,n")
	if n := waitTabletsAssigned(t, "users"); n != 3 {
		t.Fatalf("users has %d tablets, want 3 (splits g,n)", n)
	}
	if out := ok(t, "table", "list"); !strings.Contains(out, "users") || !strings.Contains(out, "profile") {
		t.Errorf("table list:\n%s", out)
	}

	ok(t, "put", "users", "alice", "profile:name=Alice", "profile:city=Paris", "--timestamp", "1000")
	ok(t, "put", "users", "alice", "profile:name=Alicia", "--timestamp", "2000")
	ok(t, "put", "users", "bob", "profile:name=Bob", "log:login=mon", "--timestamp", "1000")
	ok(t, "put", "users", "hank", "profile:name=Hank", "--timestamp", "1000")
	ok(t, "put", "users", "zed", "log:login=tue", "--timestamp", "1000")
	ok(t, "put", "users", "zoe", "profile:name=Zoe") // server timestamp

	t.Run("get", func(t *testing.T) {
		wantList(t, "get alice", summary(t, ok(t, "get", "users", "alice", "-o", "json")),
			"alice/profile:city@1000=Paris", "alice/profile:name@2000=Alicia", "alice/profile:name@1000=Alice")
		wantList(t, "get --versions 1", summary(t, ok(t, "get", "users", "alice", "--versions", "1", "-o", "json")),
			"alice/profile:city@1000=Paris", "alice/profile:name@2000=Alicia")
		wantList(t, "get --columns profile:name", summary(t, ok(t, "get", "users", "alice", "--columns", "profile:name", "-o", "json")),
			"alice/profile:name@2000=Alicia", "alice/profile:name@1000=Alice")
		wantList(t, "get bob --columns log", summary(t, ok(t, "get", "users", "bob", "--columns", "log", "-o", "json")),
			"bob/log:login@1000=mon")
		text := ok(t, "get", "users", "alice", "--columns", "profile:city")
		if want := "alice\tprofile:city\t@1000\tParis\n"; text != want {
			t.Errorf("text get = %q, want %q", text, want)
		}
		zoe := jsonCells(t, ok(t, "get", "users", "zoe", "-o", "json"))
		if len(zoe) != 1 || zoe[0]["timestamp"].(float64) < float64(time.Now().Add(-time.Hour).UnixMicro()) {
			t.Errorf("server-stamped cell: %v", zoe)
		}
		if r := tabula(t, "get", "users", "nobody"); r.code != 0 || r.stdout != "" {
			t.Errorf("get of an absent row: exit %d stdout %q", r.code, r.stdout)
		}
	})

	t.Run("scan", func(t *testing.T) {
		wantList(t, "scan", rowsOf(t, ok(t, "scan", "users", "-o", "json")), "alice", "bob", "hank", "zed", "zoe")
		wantList(t, "scan --start b --end i", rowsOf(t, ok(t, "scan", "users", "--start", "b", "--end", "i", "-o", "json")), "bob", "hank")
		wantList(t, "scan --start h", rowsOf(t, ok(t, "scan", "users", "--start", "h", "-o", "json")), "hank", "zed", "zoe")
		// As `table ranges` prints the table's end.
		wantList(t, `scan --start h --end ""`, rowsOf(t, ok(t, "scan", "users", "--start", "h", "--end", `""`, "-o", "json")), "hank", "zed", "zoe")
		wantList(t, "scan --end bob", rowsOf(t, ok(t, "scan", "users", "--end", "bob", "-o", "json")), "alice")
		wantList(t, "scan --prefix z", rowsOf(t, ok(t, "scan", "users", "--prefix", "z", "-o", "json")), "zed", "zoe")
		wantList(t, "scan --limit 2", rowsOf(t, ok(t, "scan", "users", "--limit", "2", "-o", "json")), "alice", "bob")
		wantList(t, "scan --start c --limit 2", rowsOf(t, ok(t, "scan", "users", "--start", "c", "--limit", "2", "-o", "json")), "hank", "zed")
		wantList(t, "scan --reverse", rowsOf(t, ok(t, "scan", "users", "--reverse", "-o", "json")), "zoe", "zed", "hank", "bob", "alice")
		wantList(t, "scan --end zoe --reverse --limit 2", rowsOf(t, ok(t, "scan", "users", "--end", "zoe", "--reverse", "--limit", "2", "-o", "json")), "zed", "hank")
		wantList(t, "scan --columns log", rowsOf(t, ok(t, "scan", "users", "--columns", "log", "-o", "json")), "bob", "zed")
		wantList(t, "scan --prefix a --versions 1", summary(t, ok(t, "scan", "users", "--prefix", "a", "--versions", "1", "-o", "json")),
			"alice/profile:city@1000=Paris", "alice/profile:name@2000=Alicia")
		text := ok(t, "scan", "users", "--start", "b", "--end", "c")
		if want := "bob\tlog:login\t@1000\tmon\nbob\tprofile:name\t@1000\tBob\n"; text != want {
			t.Errorf("text scan = %q, want %q", text, want)
		}
	})

	t.Run("count", func(t *testing.T) {
		if got := strings.TrimSpace(ok(t, "count", "users")); got != "5" {
			t.Errorf("count = %q, want 5", got)
		}
		if got := strings.TrimSpace(ok(t, "count", "users", "--prefix", "z", "-o", "json")); got != `{"rows":2}` {
			t.Errorf("count --prefix z -o json = %q", got)
		}
	})

	t.Run("describe", func(t *testing.T) {
		out := ok(t, "table", "describe", "users")
		for _, w := range []string{"table users", "tablets: 3", "profile", "versions=3", "log", "compression=zstd", "recent", "ttl=7d",
			"balancer: on", "automatic merge: on", "user split keys (kept by the automatic merge): g n"} {
			if !strings.Contains(out, w) {
				t.Errorf("describe lacks %q:\n%s", w, out)
			}
		}
		tablets := ok(t, "table", "tablets", "users")
		for _, w := range []string{"-inf", "+inf", "ts-", "ID", "EPOCH"} {
			if !strings.Contains(tablets, w) {
				t.Errorf("tablets lacks %q:\n%s", w, tablets)
			}
		}
	})

	t.Run("auto-merge switch", func(t *testing.T) {
		ok(t, "table", "auto-merge", "users", "off")
		if out := ok(t, "table", "describe", "users"); !strings.Contains(out, "automatic merge: off") || !strings.Contains(out, "user split keys (kept by the automatic merge): g n") {
			t.Errorf("describe after auto-merge off:\n%s", out)
		}
		ok(t, "table", "auto-merge", "users", "on")
		if out := ok(t, "table", "describe", "users"); !strings.Contains(out, "automatic merge: on") {
			t.Errorf("describe after auto-merge on:\n%s", out)
		}
		fails(t, []string{"table", "auto-merge", "users", "maybe"}, "maybe")
		fails(t, []string{"table", "auto-merge", "nosuch", "off"}, "nosuch")
	})

	t.Run("deletion protection", func(t *testing.T) {
		ok(t, "table", "create", "vault", "--family", "a", "--family", "b", "--deletion-protection")
		if out := ok(t, "table", "describe", "vault"); !strings.Contains(out, "deletion protection: on") {
			t.Errorf("describe of a table created protected:\n%s", out)
		}
		for _, args := range [][]string{{"table", "delete", "vault"}, {"family", "delete", "vault", "a"}} {
			fails(t, args, "protected from deletion", "hint: the table has deletion protection", "tabula table unprotect")
		}
		ok(t, "table", "unprotect", "vault")
		if out := ok(t, "table", "describe", "vault", "-o", "json"); !strings.Contains(out, `"deletion_protection":false`) {
			t.Errorf("describe -o json after unprotect:\n%s", out)
		}
		ok(t, "family", "delete", "vault", "a")
		ok(t, "table", "protect", "vault")
		fails(t, []string{"table", "delete", "vault"}, "protected from deletion")
		fails(t, []string{"table", "protect", "nosuch"}, "nosuch")
		ok(t, "table", "unprotect", "vault")
		ok(t, "table", "delete", "vault")
	})

	t.Run("bad input changes nothing", func(t *testing.T) {
		before := ok(t, "scan", "users", "-o", "json")
		fails(t, []string{"get", "nosuch", "alice"}, "nosuch", "hint:")
		fails(t, []string{"put", "nosuch", "alice", "profile:name=X", "--timestamp", "5"}, "nosuch", "hint:")
		fails(t, []string{"put", "users", "alice", "nofam:q=v", "--timestamp", "5"}, "nofam", "hint:")
		// One bad family in a row's mutation rejects the whole row.
		fails(t, []string{"put", "users", "alice", "profile:name=Half", "nofam:q=v", "--timestamp", "5"}, "nofam")
		fails(t, []string{"put", "users", "alice", "profile:name=Y", "profilename"}, "FAMILY:QUALIFIER=VALUE", "hint:")
		fails(t, []string{"put", "users", "alice", "profile:nameY"}, "FAMILY:QUALIFIER=VALUE")
		fails(t, []string{"delete", "users", "alice", "nofam"}, "nofam")
		fails(t, []string{"scan", "users", "--prefix", "a", "--start", "b"}, "--prefix")
		fails(t, []string{"table", "create", "bad", "--family", "cf:versions=x"}, "versions")
		fails(t, []string{"table", "create", "users", "--family", "cf"}, "users")
		fails(t, []string{"family", "modify", "users", "nofam:versions=2"}, "nofam")
		fails(t, []string{"scan", "users", "--output", "yaml"}, "yaml")
		if r := fails(t, []string{"get", "users"}, "usage", "--help"); r.code != 2 {
			t.Errorf("a wrong argument count exits %d, want 2", r.code)
		}
		r := tabulaEnv(t, nil, "table", "list", "--master", "127.0.0.1:1")
		if r.code == 0 || !strings.Contains(r.stderr, "cannot reach the master") || !strings.Contains(r.stderr, "tabula dev") {
			t.Errorf("unreachable master: exit %d stderr:\n%s", r.code, r.stderr)
		}
		r = tabulaEnv(t, []string{"TABULA_MASTER=127.0.0.1:1"}, "put", "users", "alice", "profile:name=Z", "--timestamp", "5")
		if r.code == 0 || !strings.Contains(r.stderr, "127.0.0.1:1") {
			t.Errorf("unreachable TABULA_MASTER: exit %d stderr:\n%s", r.code, r.stderr)
		}
		if after := ok(t, "scan", "users", "-o", "json"); after != before {
			t.Errorf("bad input changed the table:\nbefore %s\nafter  %s", before, after)
		}
		if out := ok(t, "table", "list", "-o", "json"); strings.Contains(out, `"bad"`) {
			t.Errorf("a failed create left a table:\n%s", out)
		}
	})

	t.Run("delete", func(t *testing.T) {
		ok(t, "delete", "users", "alice", "profile:city")
		wantList(t, "after deleting a column", summary(t, ok(t, "get", "users", "alice", "-o", "json")),
			"alice/profile:name@2000=Alicia", "alice/profile:name@1000=Alice")
		ok(t, "delete", "users", "bob", "log")
		wantList(t, "after deleting a family", summary(t, ok(t, "get", "users", "bob", "-o", "json")), "bob/profile:name@1000=Bob")
		ok(t, "delete", "users", "zed")
		wantList(t, "after deleting a row", rowsOf(t, ok(t, "scan", "users", "-o", "json")), "alice", "bob", "hank", "zoe")
		// A later write is not masked by the earlier delete, whatever its timestamp.
		ok(t, "put", "users", "zed", "log:login=wed", "--timestamp", "1")
		wantList(t, "write after delete", summary(t, ok(t, "get", "users", "zed", "-o", "json")), "zed/log:login@1=wed")
	})

	t.Run("families", func(t *testing.T) {
		ok(t, "family", "add", "users", "extra:versions=1")
		if out := ok(t, "table", "describe", "users"); !strings.Contains(out, "extra") {
			t.Fatalf("describe after family add:\n%s", out)
		}
		ok(t, "put", "users", "hank", "extra:x=1", "--timestamp", "10")
		ok(t, "family", "modify", "users", "extra:versions=2,compression=none")
		var desc map[string]any
		if err := json.Unmarshal([]byte(ok(t, "table", "describe", "users", "-o", "json")), &desc); err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, f := range desc["families"].([]any) {
			f := f.(map[string]any)
			if f["name"] == "extra" {
				found = true
				if f["versions"] != float64(2) || f["compression"] != "none" {
					t.Errorf("modified family: %v", f)
				}
			}
		}
		if !found {
			t.Errorf("describe -o json lacks family extra: %v", desc)
		}
		ok(t, "family", "delete", "users", "extra")
		if out := ok(t, "table", "describe", "users"); strings.Contains(out, "extra") {
			t.Errorf("describe after family delete:\n%s", out)
		}
		fails(t, []string{"put", "users", "hank", "extra:x=2", "--timestamp", "11"}, "extra")
	})

	t.Run("nested gc rule", func(t *testing.T) {
		// Old cells: only the newest version survives; at most 3 in all.
		ok(t, "family", "add", "users", "ev:gc=union(versions=3,intersection(age=1d,versions=1))")
		if out := ok(t, "table", "describe", "users"); !strings.Contains(out, "ev\tgc=union(versions=3,intersection(age=1d,versions=1)) compression=snappy") {
			t.Errorf("describe does not print the rule:\n%s", out)
		}
		for _, ts := range []string{"1", "2", "3"} {
			ok(t, "put", "users", "hank", "ev:x="+ts, "--timestamp", ts)
		}
		wantList(t, "old versions under the rule", summary(t, ok(t, "get", "users", "hank", "--columns", "ev", "-o", "json")),
			"hank/ev:x@3=3")
		ok(t, "family", "modify", "users", "ev:gc=intersection(age=1d,versions=2)")
		wantList(t, "after modify", summary(t, ok(t, "get", "users", "hank", "--columns", "ev", "-o", "json")),
			"hank/ev:x@3=3", "hank/ev:x@2=2")
		var desc map[string]any
		if err := json.Unmarshal([]byte(ok(t, "table", "describe", "users", "-o", "json")), &desc); err != nil {
			t.Fatal(err)
		}
		for _, f := range desc["families"].([]any) {
			if f := f.(map[string]any); f["name"] == "ev" && f["gc_rule"] != "intersection(age=1d,versions=2)" {
				t.Errorf("describe -o json: %v", f)
			}
		}
		fails(t, []string{"family", "modify", "users", "ev:gc=union(versions=1),versions=2"}, "cannot be combined")
		ok(t, "family", "modify", "users", "ev:versions=1") // back to the simple form
		if out := ok(t, "table", "describe", "users"); !strings.Contains(out, "ev\tversions=1 ttl=0s gc=union") {
			t.Errorf("describe after going back to the simple form:\n%s", out)
		}
		ok(t, "family", "delete", "users", "ev")
	})
	t.Run("aggregate families", func(t *testing.T) {
		ok(t, "family", "add", "users", "hits:type=sum")
		if out := ok(t, "table", "describe", "users"); !strings.Contains(out, "type=sum") {
			t.Fatalf("describe after adding a sum family:\n%s", out)
		}
		ok(t, "add", "users", "hank", "hits:views=2", "hits:views=3", "--timestamp", "10")
		ok(t, "add", "users", "hank", "hits:views=-1", "--timestamp", "10")
		// An aggregate family's values print as numbers; --hex shows their bytes.
		if out := ok(t, "get", "users", "hank", "--columns", "hits", "-o", "json"); out != `{"family":"hits","qualifier":"views","row":"hank","timestamp":10,"value":"4","value_encoding":"int64"}`+"\n" {
			t.Errorf("get hank --columns hits -o json: %s", out)
		}
		if out := ok(t, "scan", "users", "--prefix", "hank", "--columns", "hits"); out != "hank\thits:views\t@10\t4\n" {
			t.Errorf("scan --columns hits: %q", out)
		}
		if out := ok(t, "get", "users", "68616e6b", "--columns", "hits", "--hex"); out != "68616e6b\thits:7669657773\t@10\t"+hex.EncodeToString(cell.AggregateInput(4))+"\n" {
			t.Errorf("get --hex of an aggregate: %q", out)
		}
		fails(t, []string{"put", "users", "hank", "hits:views=x", "--timestamp", "11"}, "aggregate (sum) family")
		fails(t, []string{"add", "users", "hank", "profile:name=1"}, "holds bytes")
		fails(t, []string{"add", "users", "hank", "hits:views=x"}, "not an int64")
		fails(t, []string{"family", "modify", "users", "hits:type=max"}, "fixed when the family is created")
		ok(t, "family", "delete", "users", "hits")
	})

	t.Run("split and compact keep the data", func(t *testing.T) {
		before := ok(t, "scan", "users", "-o", "json")
		ok(t, "table", "split", "users", "b")
		if n := waitTabletsAssigned(t, "users"); n != 4 {
			t.Errorf("after split: %d tablets, want 4", n)
		}
		ok(t, "table", "compact", "users", "--major")
		if after := ok(t, "scan", "users", "-o", "json"); after != before {
			t.Errorf("split+compact changed the data:\nbefore %s\nafter  %s", before, after)
		}
	})

	t.Run("drop-rows", func(t *testing.T) {
		fails(t, []string{"table", "drop-rows", "users"}, "--prefix", "--all")
		fails(t, []string{"table", "drop-rows", "users", "--prefix", "z", "--all"}, "exactly one")
		ok(t, "put", "users", "zara", "profile:name=Zara", "--timestamp", "1000")
		ok(t, "table", "drop-rows", "users", "--prefix", "z")
		wantList(t, "scan after drop-rows --prefix z", rowsOf(t, ok(t, "scan", "users", "-o", "json")), "alice", "bob", "hank")
		ok(t, "put", "users", "zack", "profile:name=Zack", "--timestamp", "1000")
		wantList(t, "a write after the drop", rowsOf(t, ok(t, "scan", "users", "--prefix", "z", "-o", "json")), "zack")
		ok(t, "table", "drop-rows", "users", "--all")
		if out := ok(t, "scan", "users"); out != "" {
			t.Errorf("scan after drop-rows --all:\n%s", out)
		}
		if out := ok(t, "table", "describe", "users"); !strings.Contains(out, "profile") {
			t.Errorf("drop-rows --all changed the schema:\n%s", out)
		}
	})

	ok(t, "table", "delete", "users")
	if out := ok(t, "table", "list", "-o", "json"); strings.Contains(out, `"users"`) {
		t.Errorf("table list after delete:\n%s", out)
	}
	fails(t, []string{"scan", "users"}, "users")
}
