package export

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/tabuladb/tabula/cell"
)

// The format of earlier releases' `tabula export`, still read so that
// their files import: one cell per line, in the form of `--output json`,
// where row, qualifier and value are JSON strings when the bytes are valid
// UTF-8 and standard base64 otherwise, with a row_encoding,
// qualifier_encoding or value_encoding field "base64" saying so.
//
//	{"row":"alice","family":"profile","qualifier":"name","timestamp":2000,"value":"Alicia"}

// legacyCell is one decoded legacy line and the line it was on.
type legacyCell struct {
	row  []byte
	c    Cell
	line int
}

// isLegacyLine tells a legacy cell line from a row line: only the legacy
// format has a top-level "row" field (a row line's fields are key and
// cells, and base64 has no quotes).
func isLegacyLine(line []byte) bool {
	var probe map[string]json.RawMessage
	if json.Unmarshal(line, &probe) != nil {
		return false // DecodeJSONLine says what is wrong
	}
	_, ok := probe["row"]
	return ok
}

// readLegacyRow gathers the consecutive cell lines of one row.
func (jr *JSONLinesReader) readLegacyRow() (Row, error) {
	var r Row
	for {
		if jr.next == nil {
			line, err := jr.nextLine()
			if err != nil {
				return Row{}, err
			}
			if line == nil {
				if r.Key == nil {
					return Row{}, io.EOF
				}
				return r, nil
			}
			row, c, err := DecodeLegacyLine(line)
			if err != nil {
				return Row{}, fmt.Errorf("%w: %s line %d: %v", ErrBadInput, jr.name, jr.lineNo, err)
			}
			jr.next = &legacyCell{row: row, c: c, line: jr.lineNo}
		}
		if r.Key != nil && !bytes.Equal(r.Key, jr.next.row) {
			return r, nil
		}
		if r.Key == nil {
			r.Key, jr.Line = jr.next.row, jr.next.line
		}
		r.Cells = append(r.Cells, jr.next.c)
		jr.next = nil
	}
}

// legacyJSON is one legacy line. Pointers tell a missing field from an
// empty one.
type legacyJSON struct {
	Row               *string `json:"row"`
	RowEncoding       string  `json:"row_encoding"`
	Family            *string `json:"family"`
	Qualifier         *string `json:"qualifier"`
	QualifierEncoding string  `json:"qualifier_encoding"`
	Timestamp         *int64  `json:"timestamp"`
	Value             *string `json:"value"`
	ValueEncoding     string  `json:"value_encoding"`
}

// DecodeLegacyLine parses one line of the earlier releases' format into
// its row key and cell, checking every field; the error says what is
// wrong.
func DecodeLegacyLine(line []byte) ([]byte, Cell, error) {
	if err := checkUniqueKeys(line); err != nil {
		return nil, Cell{}, err
	}
	var j legacyJSON
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return nil, Cell{}, fmt.Errorf("not a JSON cell object: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, Cell{}, errors.New("text after the JSON object; write one object per line")
	}
	row, err := fieldBytes("row", j.Row, j.RowEncoding)
	if err != nil {
		return nil, Cell{}, err
	}
	if err := cell.ValidateRow(row); err != nil {
		return nil, Cell{}, err
	}
	if j.Family == nil {
		return nil, Cell{}, errors.New(`field "family" is missing`)
	}
	var c Cell
	c.Family = *j.Family
	if c.Qualifier, err = fieldBytes("qualifier", j.Qualifier, j.QualifierEncoding); err != nil {
		return nil, Cell{}, err
	}
	if j.Timestamp == nil {
		return nil, Cell{}, errors.New(`field "timestamp" is missing`)
	}
	c.Timestamp = *j.Timestamp
	if c.Value, err = fieldBytes("value", j.Value, j.ValueEncoding); err != nil {
		return nil, Cell{}, err
	}
	return row, c, checkCell(c)
}

// fieldBytes decodes a legacy byte-string field: plain text, or base64
// when its _encoding field says so.
func fieldBytes(name string, v *string, encoding string) ([]byte, error) {
	if v == nil {
		return nil, fmt.Errorf("field %q is missing", name)
	}
	switch encoding {
	case "":
		return []byte(*v), nil
	case "base64":
		b, err := base64.StdEncoding.Strict().DecodeString(*v)
		if err != nil {
			return nil, fmt.Errorf("field %q is not valid standard base64: %v", name, err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("field %q has %s_encoding %q; the only encoding is \"base64\"", name, name, encoding)
}

// checkUniqueKeys refuses a JSON object that names a field twice:
// encoding/json would silently keep the last, so `{"value":"a","value":"b"}`
// would import "b" without a word.
func checkUniqueKeys(line []byte) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil // not an object: the full decode says what is wrong
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		key, ok := t.(string)
		if !ok {
			return nil
		}
		if seen[key] {
			return fmt.Errorf("field %q appears twice; give each field once", key)
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil
		}
	}
	return nil
}
