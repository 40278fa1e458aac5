package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/tabuladb/tabula/cell"
)

// printer writes command output as text or JSON.
//
// Text output of cells is one line per cell, tab-separated:
//
//	ROW  FAMILY:QUALIFIER  @TIMESTAMP  VALUE
//
// where byte strings that are not plain printable UTF-8 are Go-quoted.
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
	for i := range cells {
		c := &cells[i]
		var err error
		if p.json {
			obj := map[string]any{"family": c.Family, "timestamp": c.Timestamp}
			putBytes(obj, "row", c.Row)
			putBytes(obj, "qualifier", c.Qualifier)
			putBytes(obj, "value", c.Value)
			err = p.object(obj)
		} else {
			_, err = fmt.Fprintf(p.w, "%s\t%s:%s\t@%d\t%s\n", display(c.Row), c.Family, display(c.Qualifier), c.Timestamp, display(c.Value))
		}
		if err != nil {
			return err
		}
	}
	return nil
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
// spaces or quotes, else Go-quoted.
func display(b []byte) string {
	if len(b) == 0 {
		return `""`
	}
	if !utf8.Valid(b) {
		return strconv.Quote(string(b))
	}
	for _, r := range string(b) {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) || r == '"' || r == '\\' {
			return strconv.Quote(string(b))
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
