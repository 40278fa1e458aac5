package main

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/rowfilter"
)

// printer writes command output as text or JSON.
//
// Text output of cells is one line per cell, tab-separated:
//
//	ROW  FAMILY:QUALIFIER  @TIMESTAMP  VALUE  [LABELS]
//
// where byte strings that are not plain printable UTF-8 are Go-quoted
// (rowfilter.Quote, which the filter language and key arguments read
// back), and labels (from a --filter's apply_label_transformer) are a
// fifth column only when a cell has them.
//
// JSON output of cells is one object per cell per line:
//
//	{"row":"r1","family":"cf","qualifier":"q","timestamp":1700000000000000,"value":"v"}
//
// Row, qualifier and value are strings when they are valid UTF-8;
// otherwise they hold the standard base64 of the bytes and a field
// "row_encoding", "qualifier_encoding" or "value_encoding" says "base64".
type printer struct {
	w    io.Writer
	json bool
	cellView
}

// cellView is how get and scan print cells, from their flags.
type cellView struct {
	hex      bool // row, qualifier and value in hex (JSON: with *_encoding "hex")
	rfc3339  bool // timestamps as RFC 3339 in UTC (JSON: a string)
	keysOnly bool // only each row's key, once
	// numeric holds the families of an int64 aggregate type: their 8-byte
	// values print as decimal numbers (JSON: a string with
	// "value_encoding": "int64"), as `tabula add` takes them.
	numeric map[string]bool
}

func newPrinter(w io.Writer, format string) (*printer, error) {
	switch format {
	case "", "text":
		return &printer{w: w}, nil
	case "json":
		return &printer{w: w, json: true}, nil
	}
	return nil, &usageError{cmd: "", err: fmt.Errorf("--output %q is not text or json", format)}
}

// cells prints the cells of one row.
func (p *printer) cells(cells []cell.Cell) error {
	if p.keysOnly {
		if len(cells) == 0 {
			return nil
		}
		if p.json {
			obj := map[string]any{}
			p.putBytes(obj, "row", cells[0].Row)
			return p.object(obj)
		}
		_, err := fmt.Fprintln(p.w, p.text(cells[0].Row))
		return err
	}
	for i := range cells {
		c := &cells[i]
		var err error
		if p.json {
			obj := map[string]any{"family": c.Family, "timestamp": c.Timestamp}
			if p.rfc3339 {
				obj["timestamp"] = rowfilter.FormatTime(c.Timestamp)
			}
			p.putBytes(obj, "row", c.Row)
			p.putBytes(obj, "qualifier", c.Qualifier)
			if n, ok := p.number(c); ok {
				obj["value"], obj["value_encoding"] = n, "int64"
			} else {
				p.putBytes(obj, "value", c.Value)
			}
			if len(c.Labels) > 0 {
				obj["labels"] = c.Labels
			}
			err = p.object(obj)
		} else {
			ts := strconv.FormatInt(c.Timestamp, 10)
			if p.rfc3339 {
				ts = rowfilter.FormatTime(c.Timestamp)
			}
			var labels string
			if len(c.Labels) > 0 {
				labels = "\t[" + strings.Join(c.Labels, ",") + "]"
			}
			value, ok := p.number(c)
			if !ok {
				value = p.text(c.Value)
			}
			_, err = fmt.Fprintf(p.w, "%s\t%s:%s\t@%s\t%s%s\n", p.text(c.Row), c.Family, p.text(c.Qualifier), ts, value, labels)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// number returns the decimal form of an aggregate family's cell, whose
// value is an 8-byte big-endian int64; false for any other cell.
func (p *printer) number(c *cell.Cell) (string, bool) {
	if !p.numeric[c.Family] {
		return "", false
	}
	n, ok := families.DecodeAggregate(c.Value)
	if !ok {
		return "", false
	}
	return strconv.FormatInt(n, 10), true
}

// text shows bytes in a text line: display's form, or hex.
func (p *printer) text(b []byte) string {
	if p.hex && len(b) > 0 {
		return hex.EncodeToString(b)
	}
	return display(b)
}

// putBytes stores b under key in hex with --hex, else as putBytes does.
func (p *printer) putBytes(obj map[string]any, key string, b []byte) {
	if p.hex {
		obj[key] = hex.EncodeToString(b)
		obj[key+"_encoding"] = "hex"
		return
	}
	putBytes(obj, key, b)
}

// putBytes stores b under key as a string, or as base64 with a
// key_encoding field when b is not valid UTF-8.
func putBytes(obj map[string]any, key string, b []byte) {
	if utf8.Valid(b) {
		obj[key] = string(b)
		return
	}
	obj[key] = base64.StdEncoding.EncodeToString(b)
	obj[key+"_encoding"] = "base64"
}

// object prints one JSON object on its own line.
func (p *printer) object(obj any) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = p.w.Write(b)
	return err
}

// table prints rows of columns, aligned, with a header; in JSON mode each
// row is an object keyed by the header names instead.
func (p *printer) table(header []string, rows [][]any) error {
	if p.json {
		for _, r := range rows {
			obj := make(map[string]any, len(header))
			for i, h := range header {
				obj[h] = r[i]
			}
			if err := p.object(obj); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(p.w, 2, 4, 2, ' ', 0)
	for i, h := range header {
		if i > 0 {
			fmt.Fprint(tw, "\t")
		}
		fmt.Fprint(tw, upper(h))
	}
	fmt.Fprintln(tw)
	for _, r := range rows {
		for i, c := range r {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, c)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// message prints a one-line result: text as is, JSON as {key: value}.
func (p *printer) message(text string, key string, value any) error {
	if p.json {
		return p.object(map[string]any{key: value})
	}
	_, err := fmt.Fprintln(p.w, text)
	return err
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// display shows bytes as they are when they are printable UTF-8 without
// spaces or quotes, else Go-quoted (rowfilter.Quote), the form
// parseBytesArg reads back.
func display(b []byte) string {
	if len(b) == 0 {
		return `""`
	}
	if !utf8.Valid(b) {
		return rowfilter.Quote(b)
	}
	for _, r := range string(b) {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) || r == '"' || r == '\\' {
			return rowfilter.Quote(b)
		}
	}
	return string(b)
}

// keyText shows a row key bound for admin output; empty means unbounded.
func keyText(b []byte, unbounded string) string {
	if len(b) == 0 {
		return unbounded
	}
	return display(b)
}
