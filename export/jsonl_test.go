package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
)

var sampleRows = []Row{
	{Key: []byte("alice"), Cells: []Cell{
		{Family: "profile", Qualifier: []byte("name"), Timestamp: 3000, Value: []byte("Al")},
		{Family: "profile", Qualifier: []byte("name"), Timestamp: 2000, Value: []byte("Alicia")},
	}},
	{Key: []byte("r\xff\x00"), Cells: []Cell{{Family: "b", Qualifier: []byte("q\x80"), Timestamp: 0, Value: []byte("\xc3\x28\n\"<&>")}}},
	{Key: []byte("x"), Cells: []Cell{{Family: "f.x-1", Qualifier: []byte{}, Timestamp: 1<<62 + 3, Value: []byte{}}}},
}

// writeRows writes rows as a JSON-lines file with header.
func writeRows(t testing.TB, header []byte, rows []Row) []byte {
	t.Helper()
	return writeFile(t, jsonLines, header, rows)
}

func readRows(t testing.TB, in []byte) ([]byte, []Row, error) {
	t.Helper()
	jr, err := NewJSONLinesReader(bytes.NewReader(in), "test.jsonl")
	if err != nil {
		return nil, nil, err
	}
	var rows []Row
	for {
		r, err := jr.ReadRow()
		if errors.Is(err, io.EOF) {
			return jr.Header(), rows, nil
		}
		if err != nil {
			return jr.Header(), rows, err
		}
		rows = append(rows, r)
	}
}

// normal makes nil and empty byte slices compare equal.
func normal(rows []Row) []Row {
	var out []Row
	for _, r := range rows {
		n := Row{Key: append([]byte{}, r.Key...)}
		for _, c := range r.Cells {
			n.Cells = append(n.Cells, Cell{c.Family, append([]byte{}, c.Qualifier...), c.Timestamp, append([]byte{}, c.Value...)})
		}
		out = append(out, n)
	}
	return out
}

func TestJSONLinesRoundTrip(t *testing.T) {
	h, err := EncodeHeader(sampleHeader)
	if err != nil {
		t.Fatal(err)
	}
	for _, header := range [][]byte{nil, h} {
		file := writeRows(t, header, sampleRows)
		gotH, rows, err := readRows(t, file)
		if err != nil {
			t.Fatalf("read %s: %v", file, err)
		}
		if !bytes.Equal(gotH, header) {
			t.Errorf("header %s, want %s", gotH, header)
		}
		if !reflect.DeepEqual(normal(rows), normal(sampleRows)) {
			t.Errorf("read %+v\nwant %+v", rows, sampleRows)
		}
		// One encoding: every key, qualifier and value is base64, always.
		if strings.Contains(string(file), "_encoding") || !strings.Contains(string(file), `"key":"YWxpY2U="`) {
			t.Errorf("file not all base64:\n%s", file)
		}
	}
}

func TestLegacyFileGroupsRows(t *testing.T) {
	old := `{"row":"alice","family":"profile","qualifier":"name","timestamp":3000,"value":"Al"}
{"row":"alice","family":"profile","qualifier":"name","timestamp":2000,"value":"Alicia"}

{"row":"cv8A","row_encoding":"base64","family":"b","qualifier":"cYA=","qualifier_encoding":"base64","timestamp":0,"value":"wygKIjwmPg==","value_encoding":"base64"}
{"row":"x","family":"f.x-1","qualifier":"","timestamp":4611686018427387907,"value":""}
`
	h, rows, err := readRows(t, []byte(old))
	if err != nil {
		t.Fatal(err)
	}
	if h != nil || !reflect.DeepEqual(normal(rows), normal(sampleRows)) {
		t.Errorf("legacy file read as %+v (header %s), want %+v", rows, h, sampleRows)
	}
}

func TestJSONLinesReaderErrors(t *testing.T) {
	good := string(writeRows(t, nil, sampleRows[:1]))
	for _, tc := range []struct{ in, want string }{
		{good + `{"key":"eA==","cells":[` + "\n", "line 2"},
		{good + `{"key":"eA==","cells":[]}`, "at least one cell"},
		{good + `{"cells":[{"family":"f","qualifier":"","timestamp":1,"value":""}]}`, `"key" is missing`},
		{good + `{"key":"","cells":[{"family":"f","qualifier":"","timestamp":1,"value":""}]}`, "empty"},
		{good + `{"key":"eA==","cells":[{"family":"f:x","qualifier":"","timestamp":1,"value":""}]}`, "family"},
		{good + `{"key":"eA==","cells":[{"family":"f","qualifier":"","timestamp":-1,"value":""}]}`, "negative"},
		{good + `{"key":"eA==","cells":[{"family":"f","qualifier":"!","timestamp":1,"value":""}]}`, "base64"},
		{good + `{"key":"eA==","cells":[{"family":"f","timestamp":1,"value":""}]}`, `"qualifier" is missing`},
		{good + `{"key":"eA==","cells":[{"family":"f","qualifier":"","timestamp":1,"value":"","x":1}]}`, `"x"`},
		{`{"tabula_export":9}` + "\n" + good, "format 9"},
	} {
		_, _, err := readRows(t, []byte(tc.in))
		if err == nil || !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("read %q: %v, want ErrBadInput containing %q", tc.in, err, tc.want)
		}
	}
}

// FuzzJSONLine: no line panics, and whatever decodes encodes to a line
// that decodes to the same row.
func FuzzJSONLine(f *testing.F) {
	for _, r := range sampleRows {
		f.Add(AppendJSONLine(nil, r))
	}
	f.Add([]byte(`{"key":"eA==","cells":[{"family":"f","qualifier":"","timestamp":1,"value":""}]}`))
	f.Add([]byte(`{"key":"eA==","cells":[{"family":"f","qualifier":"!","timestamp":1.5,"value":null}]}`))
	f.Add([]byte(`{"key":null,"cells":{}}`))
	f.Add([]byte(`{"key":"eA==","cells":[{"family":"f","qualifier":"","timestamp":01,"value":""}]}`))
	f.Add([]byte(`{"key":"eA==","cells":[{"family":"f","qualifier":"","timestamp":1,"value":"dg=="},{"family":"g","qualifier":"cQ==","timestamp":9223372036854775807,"value":""}]}` + "\r\n"))
	f.Add([]byte(`{"key":"eA=\u003d","cells":[{"family":"f","qualifier":"","timestamp":1,"value":""}]}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		// The fast parser agrees with encoding/json wherever it accepts.
		if fast, ok := decodeCanonical(line); ok {
			var j rowJSON
			if err := json.Unmarshal(line, &j); err != nil || j.Key == nil || len(j.Cells) != len(fast.Cells) || !bytes.Equal(*j.Key, fast.Key) {
				t.Fatalf("fast parse %+v of %q, encoding/json %+v, %v", fast, line, j, err)
			}
			for i, cj := range j.Cells {
				c := fast.Cells[i]
				if cj.Family == nil || cj.Qualifier == nil || cj.Timestamp == nil || cj.Value == nil || *cj.Family != c.Family ||
					!bytes.Equal(*cj.Qualifier, c.Qualifier) || *cj.Timestamp != c.Timestamp || !bytes.Equal(*cj.Value, c.Value) {
					t.Fatalf("fast parse of %q: cell %d %+v, encoding/json %+v", line, i, c, cj)
				}
			}
		}
		r, err := DecodeJSONLine(line)
		if err != nil {
			return
		}
		again, err := DecodeJSONLine(AppendJSONLine(nil, r))
		if err != nil {
			t.Fatalf("re-encoded row does not decode: %v", err)
		}
		if !reflect.DeepEqual(normal([]Row{r}), normal([]Row{again})) {
			t.Fatalf("round trip changed %+v to %+v", r, again)
		}
	})
}

// TestJSONLinesReaderRowsStayValid reads a file whose rows fill many of
// the reader's chunks, one row wider than a chunk of cells among them,
// keeping every row: each still holds what was written once the file is
// read (imports keep rows in batches across reads), and the reader's
// memory comes in chunks, not an allocation per field.
func TestJSONLinesReaderRowsStayValid(t *testing.T) {
	var rows []Row
	for i := range 2000 {
		r := Row{Key: fmt.Appendf(nil, "row\x00%06d", i)}
		n := 1 + i%7
		if i == 1000 {
			n = 3 * decoderChunk / 256 // more cells than one chunk of them holds
		}
		for j := range n {
			r.Cells = append(r.Cells, Cell{Family: []string{"a", "b.c"}[j%2], Qualifier: fmt.Appendf(nil, "q%d", j),
				Timestamp: int64(i*10 + j), Value: bytes.Repeat([]byte{byte(i + j)}, (i*j)%300)})
		}
		rows = append(rows, r)
	}
	file := writeRows(t, nil, rows)
	jr, err := NewJSONLinesReader(bytes.NewReader(file), "rows.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var got []Row
	allocs := testing.AllocsPerRun(1, func() {
		for {
			r, err := jr.ReadRow()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, r)
		}
	})
	if !reflect.DeepEqual(got, rows) {
		for i := range rows {
			if i >= len(got) || !reflect.DeepEqual(got[i], rows[i]) {
				t.Fatalf("row %d read back as %+v, want %+v", i, got[min(i, len(got)-1)], rows[i])
			}
		}
		t.Fatalf("read %d rows, want %d", len(got), len(rows))
	}
	// About one allocation per chunk and per doubling of got, not one per
	// key, qualifier and value (11,000 fields).
	if allocs > 300 {
		t.Errorf("reading %d rows allocated %v times", len(rows), allocs)
	}
}
