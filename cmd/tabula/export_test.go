package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/export"
)

// encodeLines renders cells with the printer that export uses.
func encodeLines(t testing.TB, cells []cell.Cell) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := (&printer{w: &b, json: true}).cells(cells); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

var lineSamples = []cell.Cell{
	{Row: []byte("alice"), Family: "profile", Qualifier: []byte("name"), Timestamp: 2000, Value: []byte("Alicia")},
	{Row: []byte("r\xff\x00"), Family: "b", Qualifier: []byte("q\x80"), Timestamp: 0, Value: []byte("\xc3\x28\n\"<&>")},
	{Row: []byte("x"), Family: "f.x-1", Qualifier: []byte{}, Timestamp: 1<<62 + 3, Value: []byte{}},
}

func TestLegacyLineRoundTrip(t *testing.T) {
	for _, c := range lineSamples {
		line := encodeLines(t, []cell.Cell{c})
		row, ec, err := export.DecodeLegacyLine(line)
		if err != nil {
			t.Fatalf("decode %s: %v", line, err)
		}
		got := cell.Cell{Row: row, Family: ec.Family, Qualifier: ec.Qualifier, Timestamp: ec.Timestamp, Value: ec.Value}
		if cell.Compare(&got, &c) != 0 || !bytes.Equal(got.Value, c.Value) {
			t.Errorf("decode %s = %+v, want %+v", line, got, c)
		}
		if again := encodeLines(t, []cell.Cell{got}); !bytes.Equal(again, line) {
			t.Errorf("re-encoded %s, want %s", again, line)
		}
	}
}

func TestLegacyLineErrors(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{`{"row":"a","family":"f","qualifier":"q","timestamp":1,`, "not a JSON"},
		{`not json`, "not a JSON"},
		{`{"row":"a","family":"f","qualifier":"q","value":"v"}`, `"timestamp" is missing`},
		{`{"family":"f","qualifier":"q","timestamp":1,"value":"v"}`, `"row" is missing`},
		{`{"row":"a","qualifier":"q","timestamp":1,"value":"v"}`, `"family" is missing`},
		{`{"row":"a","family":"f","timestamp":1,"value":"v"}`, `"qualifier" is missing`},
		{`{"row":"a","family":"f","qualifier":"q","timestamp":1}`, `"value" is missing`},
		{`{"row":"a","family":"f","qualifier":"q","timestamp":1,"value":"!!","value_encoding":"base64"}`, "base64"},
		{`{"row":"a","family":"f","qualifier":"q","timestamp":1,"value":"dg==","value_encoding":"hex"}`, `"hex"`},
		{`{"row":"a","family":"f","qualifier":"q","timestamp":-1,"value":"v"}`, "negative"},
		{`{"row":"a","family":"f","qualifier":"q","timestamp":1.5,"value":"v"}`, "not a JSON"},
		{`{"row":"","family":"f","qualifier":"q","timestamp":1,"value":"v"}`, "empty"},
		{`{"row":"a","family":"f:x","qualifier":"q","timestamp":1,"value":"v"}`, "family"},
		{`{"row":"a","family":"f","qualifier":"q","timestamp":1,"value":"v","extra":1}`, "extra"},
		{`{"row":"a","family":"f","qualifier":"q","timestamp":1,"value":"v"} {}`, "text after"},
		{`{"row":"a","family":"f","qualifier":"q","timestamp":1,"value":"a","value":"b"}`, `"value" appears twice`},
		{`{"row":"a","row":"b","family":"f","qualifier":"q","timestamp":1,"value":"v"}`, `"row" appears twice`},
	} {
		_, _, err := export.DecodeLegacyLine([]byte(tc.line))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("decode %s: error %v, want one containing %q", tc.line, err, tc.want)
		}
	}
}

// FuzzLegacyLine: the format of earlier releases' exports: no input panics, and whatever decodes re-encodes to
// a line that decodes to the same cell.
func FuzzLegacyLine(f *testing.F) {
	for _, c := range lineSamples {
		f.Add(encodeLines(f, []cell.Cell{c}))
	}
	f.Add([]byte(`{"row":"a","family":"f","qualifier":"q","timestamp":1,"value":"!!","value_encoding":"base64"}`))
	f.Add([]byte(`{"row":null,"family":7}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		row, ec, err := export.DecodeLegacyLine(line)
		if err != nil {
			return
		}
		c := cell.Cell{Row: row, Family: ec.Family, Qualifier: ec.Qualifier, Timestamp: ec.Timestamp, Value: ec.Value}
		row2, ec2, err := export.DecodeLegacyLine(encodeLines(t, []cell.Cell{c}))
		again := cell.Cell{Row: row2, Family: ec2.Family, Qualifier: ec2.Qualifier, Timestamp: ec2.Timestamp, Value: ec2.Value}
		if err != nil {
			t.Fatalf("re-encoded cell does not decode: %v", err)
		}
		if cell.Compare(&again, &c) != 0 || !bytes.Equal(again.Value, c.Value) {
			t.Fatalf("round trip changed %+v to %+v", c, again)
		}
	})
}

func TestExportImport(t *testing.T) {
	dir := t.TempDir()
	ok(t, "table", "create", "exp_src", "--family", "a:versions=10", "--family", "b:versions=10", "--splits", "m")
	ok(t, "table", "create", "exp_dst", "--family", "a:versions=10", "--family", "b:versions=10", "--splits", "c,p")
	waitTabletsAssigned(t, "exp_src")
	waitTabletsAssigned(t, "exp_dst")
	defer ok(t, "table", "delete", "exp_src")
	defer ok(t, "table", "delete", "exp_dst")

	ok(t, "put", "exp_src", "alice", "a:name=Alice", "b:x=1", "--timestamp", "1000")
	ok(t, "put", "exp_src", "alice", "a:name=Alicia", "--timestamp", "2000")
	ok(t, "put", "exp_src", "alice", "a:name=Al", "--timestamp", "3000")
	ok(t, "put", "exp_src", "bin\xff\xfe", "a:q\x80=\xc3\x28", "b:=\x80\x81 two\nlines", "--timestamp", "5")
	ok(t, "put", "exp_src", "bin\xff\xfe", "a:q\x80=second", "--timestamp", "6")
	ok(t, "put", "exp_src", "nick", `a:json="quoted" <tag> & \`, "--timestamp", "7")
	ok(t, "put", "exp_src", "zed", "b:z=last", "a:z=", "--timestamp", "9")
	ok(t, "put", "exp_src", "zoe", "b:z=server clock") // server timestamp

	src := ok(t, "export", "exp_src")
	if scan := ok(t, "scan", "exp_src", "-o", "json"); src != scan {
		t.Errorf("export differs from scan -o json:\nexport %s\nscan   %s", src, scan)
	}
	if n := strings.Count(src, "\n"); n != 11 {
		t.Errorf("export has %d lines, want 11 cells:\n%s", n, src)
	}
	for _, w := range []string{`"row_encoding":"base64"`, `"qualifier_encoding":"base64"`, `"value_encoding":"base64"`, `"timestamp":3000`} {
		if !strings.Contains(src, w) {
			t.Errorf("export lacks %s:\n%s", w, src)
		}
	}
	if part := ok(t, "export", "exp_src", "--prefix", "a", "--columns", "b"); strings.Count(part, "\n") != 1 || !strings.Contains(part, `"x"`) {
		t.Errorf("export --prefix a --columns b:\n%s", part)
	}

	srcFile := filepath.Join(dir, "src.jsonl")
	r := tabula(t, "export", "exp_src", "--file", srcFile, "--progress")
	if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "exported 5 rows, 11 cells") {
		t.Fatalf("export --file: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if b, err := os.ReadFile(srcFile); err != nil || string(b) != src {
		t.Fatalf("export --file wrote %q (%v), want the stdout export", b, err)
	}

	r = tabula(t, "import", "exp_dst", "--file", srcFile, "--batch", "2")
	if r.code != 0 || !strings.Contains(r.stderr, "imported 5 rows, 11 cells") {
		t.Fatalf("import: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	dstFile := filepath.Join(dir, "dst.jsonl")
	ok(t, "export", "exp_dst", "--file", dstFile)
	if b, _ := os.ReadFile(dstFile); string(b) != src {
		t.Errorf("export of the imported table differs:\nsource %s\ncopy   %s", src, b)
	}
	// Importing again writes the same cells: nothing changes.
	ok(t, "import", "exp_dst", "--file", srcFile)
	if again := ok(t, "export", "exp_dst"); again != src {
		t.Errorf("a second import changed the table:\nsource %s\ncopy   %s", src, again)
	}

	t.Run("bad input changes nothing", func(t *testing.T) {
		before := ok(t, "scan", "exp_dst", "-o", "json")
		good := `{"family":"a","qualifier":"q","row":"new1","timestamp":1,"value":"v"}` + "\n" +
			`{"family":"b","qualifier":"q","row":"new2","timestamp":1,"value":"v"}` + "\n"
		for i, tc := range []struct {
			input string
			want  []string
		}{
			{good + `{"row":"new3","family":"a",` + "\n", []string{"line 3", "not a JSON"}},
			{good + `{"row":"new3","family":"a","qualifier":"q","value":"v"}` + "\n", []string{"line 3", `"timestamp" is missing`}},
			{good + "\n" + `{"row":"new3","family":"a","qualifier":"q","timestamp":1,"value":"%%%","value_encoding":"base64"}`, []string{"line 4", "base64"}},
			// One unknown family rejects its whole row, and the batch stops the import.
			{`{"family":"a","qualifier":"q","row":"half","timestamp":1,"value":"v"}` + "\n" +
				`{"family":"nofam","qualifier":"q","row":"half","timestamp":1,"value":"v"}` + "\n", []string{"line 1", "half", "nofam", "hint:"}},
		} {
			path := filepath.Join(dir, "bad.jsonl")
			if err := os.WriteFile(path, []byte(tc.input), 0o644); err != nil {
				t.Fatal(err)
			}
			r := fails(t, []string{"import", "exp_dst", "--file", path}, tc.want...)
			t.Logf("case %d: %s", i, r.stderr)
			if r.code != 1 {
				t.Errorf("case %d: exit %d, want 1", i, r.code)
			}
			if after := ok(t, "scan", "exp_dst", "-o", "json"); after != before {
				t.Errorf("case %d changed the table:\nbefore %s\nafter  %s", i, before, after)
			}
		}
		fails(t, []string{"import", "exp_dst", "--file", filepath.Join(dir, "absent.jsonl")}, "absent.jsonl")

		// With --batch 1, the row before the bad line's row is already
		// written; the bad line's own row is not.
		path := filepath.Join(dir, "late.jsonl")
		if err := os.WriteFile(path, []byte(good+`{"row":"new2","family":"a"}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		fails(t, []string{"import", "exp_dst", "--file", path, "--batch", "1"}, "line 3", "malformed")
		wantList(t, "rows written before the bad line", rowsOf(t, ok(t, "scan", "exp_dst", "--prefix", "new", "-o", "json")), "new1")
		fails(t, []string{"import", "exp_dst", "--file", srcFile, "--batch", "0"}, "--batch")
		fails(t, []string{"import", "nosuch", "--file", srcFile}, "nosuch")
	})
}
