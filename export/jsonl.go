package export

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/tabuladb/tabula/cell"
)

// The JSON-lines format (docs/OPERATIONS.md "Exports and imports"): an
// optional header line (EncodeHeader's object, with its "tabula_export"
// version field), then one line per row in Cloud Bigtable's row schema:
//
//	{"key":"YWxpY2U=","cells":[{"family":"profile","qualifier":"bmFtZQ==","timestamp":2000,"value":"QWxpY2lh"}]}
//
// key, qualifier and value are always standard base64 (padded), whatever
// the bytes, so that a consumer decodes every line the same way; family
// names are plain text (their alphabet needs no escaping). Cells are in
// read order, every version. The reader also reads the format of earlier
// releases (one cell per line, see legacy.go).

// JSONLinesWriter writes rows as JSON lines; its header line, if any, is
// written by NewJSONLinesWriter.
type JSONLinesWriter struct {
	w   *bufio.Writer
	buf []byte
	err error
}

// NewJSONLinesWriter starts a JSON-lines file on w, writing opts.Header
// (when not nil) as its first line.
func NewJSONLinesWriter(w io.Writer, opts FileOptions) (*JSONLinesWriter, error) {
	jw := &JSONLinesWriter{w: bufio.NewWriterSize(w, 256<<10)}
	if opts.Header != nil {
		if bytes.ContainsAny(opts.Header, "\n\r") {
			return nil, errors.New("export: a header must be one line")
		}
		jw.w.Write(opts.Header)
		if err := jw.w.WriteByte('\n'); err != nil {
			return nil, err
		}
	}
	return jw, nil
}

// WriteRow writes one row as one line.
func (jw *JSONLinesWriter) WriteRow(r Row) error {
	if jw.err != nil {
		return jw.err
	}
	jw.buf = AppendJSONLine(jw.buf[:0], r)
	jw.buf = append(jw.buf, '\n')
	_, jw.err = jw.w.Write(jw.buf)
	return jw.err
}

// Close flushes what is buffered; it does not close the io.Writer.
func (jw *JSONLinesWriter) Close() error {
	if jw.err != nil {
		return jw.err
	}
	jw.err = jw.w.Flush()
	return jw.err
}

// AppendJSONLine appends r's line (without the newline) to b.
func AppendJSONLine(b []byte, r Row) []byte {
	b = append(b, `{"key":"`...)
	b = base64.StdEncoding.AppendEncode(b, r.Key)
	b = append(b, `","cells":[`...)
	for i, c := range r.Cells {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"family":`...)
		b = strconv.AppendQuote(b, c.Family) // names are [A-Za-z0-9_.-]: a JSON string as is
		b = append(b, `,"qualifier":"`...)
		b = base64.StdEncoding.AppendEncode(b, c.Qualifier)
		b = append(b, `","timestamp":`...)
		b = strconv.AppendInt(b, c.Timestamp, 10)
		b = append(b, `,"value":"`...)
		b = base64.StdEncoding.AppendEncode(b, c.Value)
		b = append(b, `"}`...)
	}
	return append(b, "]}"...)
}

// rowJSON is a row line as encoding/json decodes it ([]byte fields are
// standard base64).
type rowJSON struct {
	Key   *[]byte    `json:"key"`
	Cells []cellJSON `json:"cells"`
}

type cellJSON struct {
	Family    *string `json:"family"`
	Qualifier *[]byte `json:"qualifier"`
	Timestamp *int64  `json:"timestamp"`
	Value     *[]byte `json:"value"`
}

// DecodeJSONLine parses one row line and checks every field as a write
// would (key, family name, qualifier and value limits, timestamp >= 0);
// the error says what is wrong.
func DecodeJSONLine(line []byte) (Row, error) {
	var d lineDecoder
	return d.decode(line)
}

// decode is DecodeJSONLine with d's memory.
func (d *lineDecoder) decode(line []byte) (Row, error) {
	if r, ok := d.canonical(line); ok {
		if err := cell.ValidateRow(r.Key); err != nil {
			return Row{}, err
		}
		for i, c := range r.Cells {
			if err := checkCell(c); err != nil {
				return Row{}, fmt.Errorf("cell %d: %w", i, err)
			}
		}
		return r, nil
	}
	var j rowJSON
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return Row{}, fmt.Errorf("not a JSON row object: %v", err)
	}
	if dec.More() {
		return Row{}, errors.New("text after the JSON object; write one object per line")
	}
	if j.Key == nil {
		return Row{}, errors.New(`field "key" is missing`)
	}
	r := Row{Key: *j.Key, Cells: make([]Cell, len(j.Cells))}
	if err := cell.ValidateRow(r.Key); err != nil {
		return Row{}, err
	}
	if len(j.Cells) == 0 {
		return Row{}, errors.New(`field "cells" is missing or empty; a row has at least one cell`)
	}
	for i, cj := range j.Cells {
		c, err := cj.cell()
		if err != nil {
			return Row{}, fmt.Errorf("cell %d: %w", i, err)
		}
		r.Cells[i] = c
	}
	return r, nil
}

func (cj cellJSON) cell() (Cell, error) {
	if cj.Family == nil {
		return Cell{}, errors.New(`field "family" is missing`)
	}
	if cj.Qualifier == nil {
		return Cell{}, errors.New(`field "qualifier" is missing`)
	}
	if cj.Timestamp == nil {
		return Cell{}, errors.New(`field "timestamp" is missing`)
	}
	if cj.Value == nil {
		return Cell{}, errors.New(`field "value" is missing`)
	}
	c := Cell{Family: *cj.Family, Qualifier: *cj.Qualifier, Timestamp: *cj.Timestamp, Value: *cj.Value}
	return c, checkCell(c)
}

// checkCell checks a cell as a write would check it.
func checkCell(c Cell) error {
	if err := cell.ValidateFamilyName(c.Family); err != nil {
		return fmt.Errorf("family %q must be 1 to 64 characters of A-Z a-z 0-9 _ . -", c.Family)
	}
	if err := cell.ValidateQualifier(c.Qualifier); err != nil {
		return err
	}
	if c.Timestamp < 0 {
		return fmt.Errorf("timestamp %d is negative; give microseconds since the Unix epoch", c.Timestamp)
	}
	if len(c.Value) > cell.MaxValueLen {
		return fmt.Errorf("value of %d bytes is larger than %d", len(c.Value), cell.MaxValueLen)
	}
	return nil
}

// ErrBadInput marks a line of an import file that is not a row (or cell)
// in a format this package reads.
var ErrBadInput = errors.New("malformed import input")

// JSONLinesReader reads a JSON-lines export: this release's row lines or
// the cell lines of earlier releases, and the header when the file has one.
type JSONLinesReader struct {
	br     *bufio.Reader
	name   string
	lineNo int
	header []byte
	legacy bool
	peeked []byte // the first row line, read while looking for the header
	next   *legacyCell
	eof    bool
	dec    lineDecoder
	// Line is the line number the last row returned starts on.
	Line int
}

// NewJSONLinesReader reads the file's first line: a header is kept for
// Header, a row line is returned first by ReadRow. name names the file in
// errors.
func NewJSONLinesReader(r io.Reader, name string) (*JSONLinesReader, error) {
	jr := &JSONLinesReader{br: bufio.NewReaderSize(r, 256<<10), name: name, dec: lineDecoder{chunk: decoderChunk}}
	line, err := jr.line()
	if err != nil {
		return nil, err
	}
	if line == nil {
		return jr, nil
	}
	if isHeaderLine(line) {
		if _, err := DecodeHeader(line); err != nil {
			return nil, fmt.Errorf("%w: %s line %d: %v", ErrBadInput, name, jr.lineNo, err)
		}
		jr.header = bytes.Clone(bytes.TrimSpace(line))
		return jr, nil
	}
	jr.legacy = isLegacyLine(line)
	jr.peeked = bytes.Clone(line)
	return jr, nil
}

// Header returns the file's header line (EncodeHeader's bytes), or nil.
func (jr *JSONLinesReader) Header() []byte { return jr.header }

// Legacy reports whether the file is in the one-cell-per-line format of
// earlier releases.
func (jr *JSONLinesReader) Legacy() bool { return jr.legacy }

// line returns the next non-blank line, or nil at the end.
func (jr *JSONLinesReader) line() ([]byte, error) {
	for !jr.eof {
		line, err := jr.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			rest, err2 := jr.br.ReadBytes('\n')
			line, err = append(bytes.Clone(line), rest...), err2
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("reading %s at line %d: %w", jr.name, jr.lineNo+1, err)
			}
			jr.eof = true
		}
		jr.lineNo++
		if len(bytes.TrimSpace(line)) > 0 {
			return line, nil
		}
	}
	return nil, nil
}

// nextLine returns the line peeked at first, then the next lines; nil at
// the end.
func (jr *JSONLinesReader) nextLine() ([]byte, error) {
	if line := jr.peeked; line != nil {
		jr.peeked = nil
		return line, nil
	}
	return jr.line()
}

func isHeaderLine(line []byte) bool {
	return bytes.HasPrefix(bytes.TrimLeft(line, " \t"), []byte(`{"`+headerTag+`"`))
}

// ReadRow returns the next row, io.EOF after the last. Unlike RowReader's
// minimum, its rows stay valid after later calls (they are never written
// again): an import keeps them in batches.
func (jr *JSONLinesReader) ReadRow() (Row, error) {
	if jr.legacy {
		return jr.readLegacyRow()
	}
	line, err := jr.nextLine()
	if err != nil {
		return Row{}, err
	}
	if line == nil {
		return Row{}, io.EOF
	}
	jr.Line = jr.lineNo
	r, err := jr.dec.decode(line)
	if err != nil {
		return Row{}, fmt.Errorf("%w: %s line %d: %v", ErrBadInput, jr.name, jr.lineNo, err)
	}
	return r, nil
}
