package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/export"
	"github.com/tabuladb/tabula/internal/seaweed"
	"github.com/tabuladb/tabula/internal/seaweed/seaweedtest"
	"github.com/tabuladb/tabula/vfs/s3fs"
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

// exportLines splits an export into its header and its row lines.
func exportLines(t *testing.T, out string) (export.Header, []string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	h, err := export.DecodeHeader([]byte(lines[0]))
	if err != nil {
		t.Fatalf("export's first line is not a header: %v\n%s", err, out)
	}
	return h, lines[1:]
}

func TestExportImport(t *testing.T) {
	dir := t.TempDir()
	ok(t, "table", "create", "exp_src", "--family", "a:gc=union(versions=3,intersection(age=7d,versions=5)),compression=zstd,blocksize=16k,inmemory=true",
		"--family", "b:versions=10,bloom=row+column", "--splits", "m")
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
	scanSrc := ok(t, "scan", "exp_src", "-o", "json")

	src := ok(t, "export", "exp_src")
	h, rows := exportLines(t, src)
	if len(rows) != 5 {
		t.Errorf("export has %d row lines, want 5:\n%s", len(rows), src)
	}
	if h.Table != "exp_src" || len(h.Families) != 2 || h.Families[0].GCRule.String() != "union(versions=3,intersection(age=7d,versions=5))" ||
		!h.Families[0].InMemory || h.Families[0].BlockSize != 16<<10 || len(h.Splits) != 1 || string(h.Splits[0]) != "m" {
		t.Errorf("header %+v lacks the schema", h)
	}
	// One encoding on every line: base64 for key, qualifier and value.
	if !strings.Contains(src, `{"key":"YWxpY2U=","cells":[{"family":"a","qualifier":"bmFtZQ==","timestamp":3000,"value":"QWw="}`) {
		t.Errorf("export lacks alice's line in base64:\n%s", src)
	}
	if strings.Contains(src, "_encoding") {
		t.Errorf("export has per-line encodings:\n%s", src)
	}
	if part := ok(t, "export", "exp_src", "--prefix", "a", "--columns", "b"); strings.Count(part, "\n") != 2 || !strings.Contains(part, `"eA=="`) {
		t.Errorf("export --prefix a --columns b:\n%s", part)
	}

	srcFile := filepath.Join(dir, "src.jsonl")
	r := tabula(t, "export", "exp_src", "--file", srcFile, "--progress")
	if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "exported 5 rows, 11 cells") {
		t.Fatalf("export --file: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}

	t.Run("import --create recreates the table", func(t *testing.T) {
		r := fails(t, []string{"import", "exp_new", "--file", srcFile}, "exp_new", "does not exist", "--create")
		if r.code != 1 || strings.Count(r.stderr, "does not exist") != 1 {
			t.Errorf("exit %d, want 1 and one message:\n%s", r.code, r.stderr)
		}
		fails(t, []string{"table", "describe", "exp_new"}, "exp_new")
		r = tabula(t, "import", "exp_new", "--file", srcFile, "--create", "--batch", "2")
		if r.code != 0 || !strings.Contains(r.stderr, "created table exp_new") || !strings.Contains(r.stderr, "imported 5 rows, 11 cells") {
			t.Fatalf("import --create: exit %d stderr %q", r.code, r.stderr)
		}
		defer ok(t, "table", "delete", "exp_new")
		if got := ok(t, "scan", "exp_new", "-o", "json"); got != scanSrc {
			t.Errorf("imported table differs:\nsource %s\ncopy   %s", scanSrc, got)
		}
		h2, _ := exportLines(t, ok(t, "export", "exp_new"))
		if len(h2.Families) != len(h.Families) || len(h2.Splits) != 1 || string(h2.Splits[0]) != "m" {
			t.Fatalf("recreated schema %+v, want %+v", h2, h)
		}
		for i := range h.Families {
			if !h.Families[i].Equal(h2.Families[i]) {
				t.Errorf("family %d: %+v, want %+v", i, h2.Families[i], h.Families[i])
			}
		}
		// Again: nothing changes (explicit timestamps).
		ok(t, "import", "exp_new", "--file", srcFile, "--create")
		if got := ok(t, "scan", "exp_new", "-o", "json"); got != scanSrc {
			t.Errorf("a second import changed the table")
		}
	})

	t.Run("bulkload --create loads the same table", func(t *testing.T) {
		fails(t, []string{"bulkload", "exp_bulk", srcFile}, "exp_bulk", "does not exist", "--create")
		r := tabula(t, "bulkload", "exp_bulk", srcFile, "--create")
		if r.code != 0 || !strings.Contains(r.stderr, "created table exp_bulk") || !strings.Contains(r.stderr, "bulkloaded 5 rows, 11 cells") {
			t.Fatalf("bulkload --create: exit %d stderr %q", r.code, r.stderr)
		}
		defer ok(t, "table", "delete", "exp_bulk")
		if got := ok(t, "scan", "exp_bulk", "-o", "json"); got != scanSrc {
			t.Errorf("bulk-loaded table differs:\nsource %s\ncopy   %s", scanSrc, got)
		}
		ok(t, "bulkload", "exp_bulk", srcFile) // again: the same cells
		if got := ok(t, "scan", "exp_bulk", "-o", "json"); got != scanSrc {
			t.Errorf("a second bulk load changed the table")
		}
		fails(t, []string{"bulkload", "exp_bulk"}, "needs files", "--from")
		fails(t, []string{"bulkload", "exp_bulk", srcFile, "--from", dir}, "cannot be combined")
		fails(t, []string{"bulkload", "exp_bulk", filepath.Join(dir, "missing.jsonl")}, "missing.jsonl")
	})

	t.Run("parquet and avro", func(t *testing.T) {
		// The format from the file name; import tells it by its first
		// bytes and recreates the table from the header in its metadata.
		pq := filepath.Join(dir, "src.parquet")
		if r := tabula(t, "export", "exp_src", "--file", pq); r.code != 0 || !strings.Contains(r.stderr, "exported 5 rows, 11 cells") {
			t.Fatalf("export --file %s: exit %d stderr %q", pq, r.code, r.stderr)
		}
		if b, err := os.ReadFile(pq); err != nil || !bytes.HasPrefix(b, []byte("PAR1")) {
			t.Fatalf("%s is not a Parquet file: %v", pq, err)
		}
		r := tabula(t, "import", "exp_pq", "--file", pq, "--create")
		if r.code != 0 || !strings.Contains(r.stderr, "created table exp_pq") || !strings.Contains(r.stderr, "imported 5 rows, 11 cells") {
			t.Fatalf("import --file %s --create: exit %d stderr %q", pq, r.code, r.stderr)
		}
		defer ok(t, "table", "delete", "exp_pq")
		if got := ok(t, "scan", "exp_pq", "-o", "json"); got != scanSrc {
			t.Errorf("table imported from Parquet differs:\nsource %s\ncopy   %s", scanSrc, got)
		}
		// The format is told by the first bytes, not the name.
		b, err := os.ReadFile(pq)
		if err != nil {
			t.Fatal(err)
		}
		misnamed := filepath.Join(dir, "parquet-named.jsonl")
		if err := os.WriteFile(misnamed, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if r := tabula(t, "import", "exp_pq", "--file", misnamed); r.code != 0 || !strings.Contains(r.stderr, "imported 5 rows, 11 cells") {
			t.Fatalf("import of a Parquet file named .jsonl: exit %d stderr %q", r.code, r.stderr)
		}
		// Families with every setting, and the split point.
		schema := func(table string) string {
			d := ok(t, "table", "describe", table)
			return d[strings.Index(d, "user split keys"):strings.Index(d, "tablets:")]
		}
		if got, want := schema("exp_pq"), schema("exp_src"); got != want {
			t.Errorf("schema from the Parquet metadata:\n%s\nwant\n%s", got, want)
		}

		// A parallel Avro export, bulk loaded; and Avro through a pipe.
		av := filepath.Join(dir, "avro")
		ok(t, "export", "exp_src", "--to", av, "--workers", "2", "--format", "avro")
		ents, err := os.ReadDir(av)
		if err != nil || len(ents) != 3 || ents[0].Name() != "manifest.json" || ents[1].Name() != "part-00000.avro" {
			t.Fatalf("--format avro --to wrote %v, %v", ents, err)
		}
		if r := tabula(t, "bulkload", "exp_av", "--from", av, "--create"); r.code != 0 || !strings.Contains(r.stderr, "bulkloaded 5 rows, 11 cells") {
			t.Fatalf("bulkload --from %s: exit %d stderr %q", av, r.code, r.stderr)
		}
		defer ok(t, "table", "delete", "exp_av")
		if got := ok(t, "scan", "exp_av", "-o", "json"); got != scanSrc {
			t.Errorf("table bulk loaded from Avro differs:\nsource %s\ncopy   %s", scanSrc, got)
		}
		stream := ok(t, "export", "exp_src", "--format", "avro")
		if !strings.HasPrefix(stream, "Obj\x01") {
			t.Fatalf("export --format avro to stdout starts %q", stream[:min(len(stream), 8)])
		}
		if r := tabulaStdin(t, []byte(stream), "import", "exp_avs", "--create"); r.code != 0 || !strings.Contains(r.stderr, "imported 5 rows, 11 cells") {
			t.Fatalf("import of Avro from stdin: exit %d stderr %q", r.code, r.stderr)
		}
		defer ok(t, "table", "delete", "exp_avs")
		if got := ok(t, "scan", "exp_avs", "-o", "json"); got != scanSrc {
			t.Errorf("table imported from an Avro stream differs:\nsource %s\ncopy   %s", scanSrc, got)
		}
		fails(t, []string{"export", "exp_src", "--format", "csv"}, "--format", "jsonl, parquet, avro")
	})

	t.Run("an earlier release's file imports", func(t *testing.T) {
		old := filepath.Join(dir, "old.jsonl")
		if err := os.WriteFile(old, []byte(scanSrc), 0o644); err != nil { // scan -o json is the old export format
			t.Fatal(err)
		}
		r := tabula(t, "import", "exp_dst", "--file", old, "--batch", "2")
		if r.code != 0 || !strings.Contains(r.stderr, "imported 5 rows, 11 cells") {
			t.Fatalf("import of the old format: exit %d stderr %q", r.code, r.stderr)
		}
		if got := ok(t, "scan", "exp_dst", "-o", "json"); got != scanSrc {
			t.Errorf("old-format import differs:\nsource %s\ncopy   %s", scanSrc, got)
		}
		fails(t, []string{"import", "exp_old", "--file", old, "--create"}, "no header", "table create")
	})

	t.Run("parallel export equals a single export", func(t *testing.T) {
		for i := range 40 {
			ok(t, "put", "exp_src", fmt.Sprintf("row%02d", i), "b:n=v", "--timestamp", "11")
		}
		asOf := "2026-01-01T00:00:00Z"
		single := ok(t, "export", "exp_src", "--as-of", asOf)
		_, want := exportLines(t, single)
		out := filepath.Join(dir, "par")
		ok(t, "export", "exp_src", "--to", out, "--workers", "3", "--as-of", asOf)
		var m export.Manifest
		b, err := os.ReadFile(filepath.Join(out, "manifest.json"))
		if err != nil || json.Unmarshal(b, &m) != nil {
			t.Fatalf("manifest: %v %s", err, b)
		}
		if len(m.Files) < 2 {
			t.Errorf("manifest lists %d files, want 2 or 3 (split by SampleRowKeys)", len(m.Files))
		}
		var got []string
		var cells int64
		for _, f := range m.Files {
			b, err := os.ReadFile(filepath.Join(out, f.Name))
			if err != nil {
				t.Fatal(err)
			}
			fh, lines := exportLines(t, string(b))
			if fh.AsOf != 1767225600000000 {
				t.Errorf("%s: as_of %d", f.Name, fh.AsOf)
			}
			got = append(got, lines...)
			cells += f.Cells
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("parts together differ from the single export:\nparts  %s\nsingle %s", got, want)
		}
		if cells != 50 { // zoe's cell has the server's timestamp, after the cut
			t.Errorf("manifest counts %d cells, want 50", cells)
		}
		fails(t, []string{"export", "exp_src", "--to", out}, "part-00000.jsonl", "empty directory")

		r := tabula(t, "import", "exp_par", "--from", out, "--workers", "4", "--create")
		if r.code != 0 || !strings.Contains(r.stderr, "imported 44 rows, 50 cells") {
			t.Fatalf("import --from: exit %d stderr %q", r.code, r.stderr)
		}
		defer ok(t, "table", "delete", "exp_par")
		if got, want := ok(t, "scan", "exp_par", "-o", "json"), ok(t, "scan", "exp_src", "-o", "json", "--time-range", ",2026-01-01T00:00:00.000001Z"); got != want {
			t.Errorf("parallel import differs:\nsource %s\ncopy   %s", want, got)
		}
		// The state file records the files: a rerun skips them all.
		r = tabula(t, "import", "exp_par", "--from", out)
		if r.code != 0 || !strings.Contains(r.stderr, fmt.Sprintf("skipped %d files", len(m.Files))) || !strings.Contains(r.stderr, "imported 0 rows") {
			t.Errorf("rerun: exit %d stderr %q", r.code, r.stderr)
		}
	})

	t.Run("as-of", func(t *testing.T) {
		_, lines := exportLines(t, ok(t, "export", "exp_src", "--as-of", "5", "--prefix", "bin"))
		if len(lines) != 1 || strings.Count(lines[0], `"family"`) != 2 {
			t.Errorf("--as-of 5 exported %s, want bin's two cells at 5", lines)
		}
		if out := ok(t, "export", "exp_src", "--as-of", "4"); strings.Count(out, "\n") != 1 {
			t.Errorf("--as-of 4 exported rows:\n%s", out)
		}
	})

	t.Run("range", func(t *testing.T) {
		// A binary bound typed as the output prints it; END excluded.
		rh, lines := exportLines(t, ok(t, "export", "exp_src", "--range", `"bin\xff\xfe",o`))
		if len(lines) != 2 || !strings.HasPrefix(lines[0], `{"key":"Ymlu//4="`) || !strings.HasPrefix(lines[1], `{"key":"bmljaw=="`) {
			t.Errorf("--range exported %s, want bin\\xff\\xfe and nick", lines)
		}
		if string(rh.Start) != "bin\xff\xfe" || string(rh.End) != "o" {
			t.Errorf("header range %q..%q", rh.Start, rh.End)
		}
		if _, lines := exportLines(t, ok(t, "export", "exp_src", "--range", "zed,")); len(lines) != 2 {
			t.Errorf("--range zed, exported %s, want zed and zoe", lines)
		}
		// As `table ranges` prints a range that runs to the table's end.
		if _, lines := exportLines(t, ok(t, "export", "exp_src", "--range", `zed,""`)); len(lines) != 2 {
			t.Errorf(`--range zed,"" exported %s, want zed and zoe`, lines)
		}
	})

	t.Run("bad flags", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want []string
		}{
			{[]string{"export", "exp_src", "--workers", "0", "--to", dir}, []string{"--workers 0"}},
			{[]string{"export", "exp_src", "--workers", "2"}, []string{"--workers 2 needs --to"}},
			{[]string{"export", "exp_src", "--file", "x", "--to", dir}, []string{"--file and --to"}},
			{[]string{"export", "exp_src", "--range", "a"}, []string{"--range", "no ','"}},
			{[]string{"export", "exp_src", "--range", "m,a"}, []string{"--range", "empty"}},
			{[]string{"export", "exp_src", "--range", "a,m", "--start", "b"}, []string{"--range cannot be combined with --start"}},
			{[]string{"export", "exp_src", "--as-of", "yesterday"}, []string{"--as-of", "RFC 3339"}},
			{[]string{"export", "exp_src", "--to", "s3://"}, []string{"--to s3://", "s3://BUCKET"}},
			{[]string{"import", "exp_dst", "--from", dir, "--file", srcFile}, []string{"--file and --from"}},
			{[]string{"import", "exp_dst", "--state", "s", "--file", srcFile}, []string{"--state needs --from"}},
			{[]string{"import", "exp_dst", "--from", filepath.Join(dir, "absent")}, []string{"--from", "absent"}},
			{[]string{"import", "exp_dst", "--from", t.TempDir()}, []string{"no manifest.json"}},
			{[]string{"import", "exp_dst", "--workers", "0", "--file", srcFile}, []string{"--workers 0"}},
			{[]string{"import", "exp_dst", "--file", srcFile, "--batch", "0"}, []string{"--batch"}},
		} {
			if r := fails(t, tc.args, tc.want...); r.code != 1 {
				t.Errorf("%v: exit %d, want 1", tc.args, r.code)
			}
		}
	})

	t.Run("bad input changes nothing", func(t *testing.T) {
		before := ok(t, "scan", "exp_dst", "-o", "json")
		good := `{"key":"bmV3MQ==","cells":[{"family":"a","qualifier":"cQ==","timestamp":1,"value":"dg=="}]}` + "\n" +
			`{"key":"bmV3Mg==","cells":[{"family":"b","qualifier":"cQ==","timestamp":1,"value":"dg=="}]}` + "\n"
		for i, tc := range []struct {
			input string
			want  []string
		}{
			{good + `{"key":"bmV3Mw==","cells":[` + "\n", []string{"line 3", "not a JSON"}},
			{good + `{"key":"bmV3Mw==","cells":[{"family":"a","qualifier":"cQ==","value":"dg=="}]}` + "\n", []string{"line 3", `"timestamp" is missing`}},
			{good + "\n" + `{"key":"bmV3Mw==","cells":[{"family":"a","qualifier":"cQ==","timestamp":1,"value":"%%%"}]}`, []string{"line 4", "base64"}},
			// One unknown family rejects its whole row, and the batch stops the import.
			{`{"key":"aGFsZg==","cells":[{"family":"a","qualifier":"cQ==","timestamp":1,"value":"dg=="},{"family":"nofam","qualifier":"cQ==","timestamp":1,"value":"dg=="}]}` + "\n", []string{"line 1", "half", "nofam"}},
		} {
			path := filepath.Join(dir, "bad.jsonl")
			if err := os.WriteFile(path, []byte(tc.input), 0o644); err != nil {
				t.Fatal(err)
			}
			r := fails(t, []string{"import", "exp_dst", "--file", path, "--workers", "1"}, tc.want...)
			t.Logf("case %d: %s", i, r.stderr)
			if r.code != 1 {
				t.Errorf("case %d: exit %d, want 1", i, r.code)
			}
			if after := ok(t, "scan", "exp_dst", "-o", "json"); after != before {
				t.Errorf("case %d changed the table:\nbefore %s\nafter  %s", i, before, after)
			}
		}
		fails(t, []string{"import", "exp_dst", "--file", filepath.Join(dir, "absent.jsonl")}, "absent.jsonl")
		fails(t, []string{"import", "nosuch", "--file", srcFile}, "nosuch", "--create")
	})
}

// TestExportImportObjectStore: --to and --from an s3:// prefix write and
// read plain objects (one per file, as Spark or DuckDB read them), and
// an import from there recreates the table.
func TestExportImportObjectStore(t *testing.T) {
	srv := seaweedtest.Start(t, seaweed.Config{Bucket: "exports"})
	url := "s3://exports/users/2026?endpoint=" + srv.Endpoint()
	ok(t, "table", "create", "exps3_src", "--family", "a:versions=5", "--splits", "m")
	waitTabletsAssigned(t, "exps3_src")
	defer ok(t, "table", "delete", "exps3_src")
	for i := range 30 {
		ok(t, "put", "exps3_src", fmt.Sprintf("k%02d\xff", i), "a:q=v\x01"+strconv.Itoa(i), "--timestamp", "7")
	}
	want := ok(t, "scan", "exps3_src", "-o", "json")

	ok(t, "export", "exps3_src", "--to", url, "--workers", "2")
	cfg, err := s3fs.ParseURL(url, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	objs, err := s3fs.OpenObjects(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	names, err := objs.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	wantList(t, "objects", names, "manifest.json", "part-00000.jsonl", "part-00001.jsonl")
	fails(t, []string{"export", "exps3_src", "--to", url}, "part-00000.jsonl", "exists")

	state := filepath.Join(t.TempDir(), "s3.state")
	r := tabula(t, "import", "exps3_dst", "--from", url, "--create", "--state", state)
	if r.code != 0 || !strings.Contains(r.stderr, "imported 30 rows, 30 cells") {
		t.Fatalf("import --from s3: exit %d stderr %q", r.code, r.stderr)
	}
	defer ok(t, "table", "delete", "exps3_dst")
	if got := ok(t, "scan", "exps3_dst", "-o", "json"); got != want {
		t.Errorf("import from s3 differs:\nsource %s\ncopy   %s", want, got)
	}
	fails(t, []string{"import", "exps3_dst", "--from", "s3://nobucket/x?endpoint=" + srv.Endpoint()}, "nobucket", "does not exist")

	// Parquet objects: read through a temporary copy (the index is at
	// the file's end), the table created from their metadata.
	pqURL := "s3://exports/users/pq?endpoint=" + srv.Endpoint()
	ok(t, "export", "exps3_src", "--to", pqURL, "--workers", "2", "--format", "parquet")
	r = tabula(t, "import", "exps3_pq", "--from", pqURL, "--create", "--state", filepath.Join(t.TempDir(), "pq.state"))
	if r.code != 0 || !strings.Contains(r.stderr, "imported 30 rows, 30 cells") {
		t.Fatalf("import --from s3 of Parquet: exit %d stderr %q", r.code, r.stderr)
	}
	defer ok(t, "table", "delete", "exps3_pq")
	if got := ok(t, "scan", "exps3_pq", "-o", "json"); got != want {
		t.Errorf("Parquet import from s3 differs:\nsource %s\ncopy   %s", want, got)
	}
}
