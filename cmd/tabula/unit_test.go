package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/rowfilter"
)

func TestParseCellArg(t *testing.T) {
	cases := []struct {
		in      string
		fam     string
		q, v    string
		wantErr bool
	}{
		{in: "cf:q=v", fam: "cf", q: "q", v: "v"},
		{in: "cf:=v", fam: "cf", q: "", v: "v"},
		{in: "cf:q=", fam: "cf", q: "q", v: ""},
		{in: "cf:a:b=c=d", fam: "cf", q: "a:b", v: "c=d"},
		{in: "cf:q", wantErr: true},
		{in: "cfq=v", wantErr: true},
		{in: ":q=v", wantErr: true},
		{in: "c f:q=v", wantErr: true},
		{in: "", wantErr: true},
		{in: `cf:"a=b"="\xff\x00"`, fam: "cf", q: "a=b", v: "\xff\x00"},
		{in: `cf:"\x01"=plain"quote`, fam: "cf", q: "\x01", v: `plain"quote`},
		{in: `cf:"a=b`, wantErr: true},
		{in: `cf:q="\xzz"`, wantErr: true},
	}
	for _, c := range cases {
		got, err := parseCellArgTyped("cell", c.in, false)
		if c.wantErr {
			if !errors.Is(err, cell.ErrInvalid) {
				t.Errorf("parseCellArgTyped(%q) error = %v, want one wrapping cell.ErrInvalid", c.in, err)
			}
			continue
		}
		if err != nil || got.family != c.fam || string(got.qualifier) != c.q || string(got.value) != c.v {
			t.Errorf("parseCellArgTyped(%q) = %+v, %v; want %s:%s=%s", c.in, got, err, c.fam, c.q, c.v)
		}
	}
}

func TestReadFilterSelectsColumnsAndVersions(t *testing.T) {
	row := []byte("r")
	cells := []cell.Cell{
		{Row: row, Family: "a", Qualifier: []byte("x"), Timestamp: 3, Value: []byte("ax3")},
		{Row: row, Family: "a", Qualifier: []byte("x"), Timestamp: 2, Value: []byte("ax2")},
		{Row: row, Family: "a", Qualifier: []byte("xy"), Timestamp: 2, Value: []byte("axy2")},
		{Row: row, Family: "b", Qualifier: []byte("x"), Timestamp: 5, Value: []byte("bx5")},
		{Row: row, Family: "b", Qualifier: []byte("x"), Timestamp: 4, Value: []byte("bx4")},
		{Row: row, Family: "c", Qualifier: []byte("z"), Timestamp: 1, Value: []byte("cz1")},
	}
	cases := []struct {
		cols     []string
		versions int
		want     string
	}{
		{nil, 0, "ax3 ax2 axy2 bx5 bx4 cz1"},
		{nil, 1, "ax3 axy2 bx5 cz1"},
		{[]string{"a:x"}, 0, "ax3 ax2"},
		{[]string{"a:x", "b"}, 1, "ax3 bx5"},
		{[]string{"c", "a:xy"}, 0, "axy2 cz1"},
		{[]string{"b:y"}, 0, ""},
	}
	for _, c := range cases {
		cols, err := parseColumns(c.cols, false)
		if err != nil {
			t.Fatal(err)
		}
		f, err := readSpec{cols: cols, versions: c.versions}.filter()
		if err != nil {
			t.Fatal(err)
		}
		out := cells
		if f != nil {
			comp, err := rowfilter.Compile(f)
			if err != nil {
				t.Fatalf("columns %v versions %d: %v", c.cols, c.versions, err)
			}
			out = comp.Apply(row, cells)
		}
		var got []string
		for _, x := range out {
			got = append(got, string(x.Value))
		}
		if s := strings.Join(got, " "); s != c.want {
			t.Errorf("columns %v versions %d: got %q, want %q", c.cols, c.versions, s, c.want)
		}
	}
	if _, err := parseColumns([]string{"bad fam"}, false); !errors.Is(err, cell.ErrInvalid) {
		t.Errorf("bad family in --columns: err = %v", err)
	}
	if _, err := (readSpec{versions: -1}).filter(); !errors.Is(err, cell.ErrInvalid) {
		t.Errorf("negative versions: err = %v", err)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "65536": 65536, "64k": 64 << 10, "64KiB": 64 << 10, "64MiB": 64 << 20, "1g": 1 << 30, "2 MB": 2 << 20, "10b": 10} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x", "-1", "1.5m", "99999999999g"} {
		if _, err := parseSize(in); !errors.Is(err, cell.ErrInvalid) {
			t.Errorf("parseSize(%q) err = %v, want invalid", in, err)
		}
	}
}

func TestJSONOutputEncodesNonUTF8AsBase64(t *testing.T) {
	var buf bytes.Buffer
	p, err := newPrinter(&buf, "json")
	if err != nil {
		t.Fatal(err)
	}
	bin := []byte{0xff, 0x00, 0xfe}
	if err := p.cells([]cell.Cell{
		{Row: []byte("r1"), Family: "cf", Qualifier: []byte("q"), Timestamp: 42, Value: []byte("héllo")},
		{Row: bin, Family: "cf", Qualifier: []byte("q"), Timestamp: 7, Value: bin},
	}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2:\n%s", len(lines), buf.String())
	}
	var a, b map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &b); err != nil {
		t.Fatal(err)
	}
	if a["row"] != "r1" || a["family"] != "cf" || a["qualifier"] != "q" || a["timestamp"] != float64(42) || a["value"] != "héllo" || a["value_encoding"] != nil {
		t.Errorf("utf-8 cell: %v", a)
	}
	enc := base64.StdEncoding.EncodeToString(bin)
	if b["row"] != enc || b["row_encoding"] != "base64" || b["value"] != enc || b["value_encoding"] != "base64" || b["qualifier_encoding"] != nil {
		t.Errorf("binary cell: %v", b)
	}
	if _, err := newPrinter(&buf, "yaml"); err == nil {
		t.Error("--output yaml accepted")
	}
}

func TestTextDisplayQuotesUnprintable(t *testing.T) {
	for in, want := range map[string]string{"abc": "abc", "": `""`, "a b": `"a b"`, "a\x00": `"a\x00"`, "\xff": `"\xff"`, "日本": "日本"} {
		if got := display([]byte(in)); got != want {
			t.Errorf("display(%q) = %s, want %s", in, got, want)
		}
	}
}
