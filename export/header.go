package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
)

// FormatVersion is the version of the header and of the JSON-lines row
// format this package writes; a reader refuses a later one, naming it.
const FormatVersion = 1

// headerTag is the field that marks a header: the first line of a
// JSON-lines export, the manifest's "header", and the bytes other formats
// store under their metadata key.
const headerTag = "tabula_export"

// Header is an export's schema and cut (docs/OPERATIONS.md "Exports and
// imports"): what `tabula import --create` recreates the table from, and
// which cells the export holds.
type Header struct {
	// Table is the exported table's name.
	Table string
	// AsOf is the export's cut: it holds the cells with a timestamp <= AsOf
	// (microseconds since the Unix epoch).
	AsOf int64
	// Start and End bound the exported rows, [Start, End); nil End is the
	// end of the table.
	Start, End []byte
	// Families are the table's families with every setting.
	Families []families.Family
	// Splits are the table's tablet boundaries when it was exported, in
	// key order.
	Splits [][]byte
	// SplitThreshold is the table's split size in bytes (0: the cluster's
	// default).
	SplitThreshold int64
}

// headerJSON is Header's wire form: every byte string in standard base64
// (encoding/json's []byte), every family setting by its name in the CLI's
// family spec (docs/OPERATIONS.md), so that other tools can read it.
type headerJSON struct {
	Format         *int         `json:"tabula_export"`
	Table          string       `json:"table"`
	AsOf           int64        `json:"as_of"`
	Start          []byte       `json:"start,omitempty"`
	End            []byte       `json:"end,omitempty"`
	Families       []familyJSON `json:"families"`
	Splits         [][]byte     `json:"splits"`
	SplitThreshold int64        `json:"split_threshold,omitempty"`
}

type familyJSON struct {
	Name         string `json:"name"`
	MaxVersions  int    `json:"max_versions,omitempty"`
	TTLMicros    int64  `json:"ttl_micros,omitempty"`
	GC           string `json:"gc,omitempty"`
	GCRule       string `json:"gc_rule,omitempty"`
	Compression  string `json:"compression"`
	Bloom        string `json:"bloom"`
	BlockSize    int    `json:"block_size,omitempty"`
	InMemory     bool   `json:"in_memory,omitempty"`
	Type         string `json:"type"`
	DeclaredType []byte `json:"declared_type,omitempty"`
}

// EncodeHeader returns h as one line of JSON (no newline), the bytes
// FileOptions.Header carries.
func EncodeHeader(h Header) ([]byte, error) {
	v := FormatVersion
	j := headerJSON{Format: &v, Table: h.Table, AsOf: h.AsOf, Start: h.Start, End: h.End,
		Splits: h.Splits, SplitThreshold: h.SplitThreshold, Families: make([]familyJSON, len(h.Families))}
	if j.Splits == nil {
		j.Splits = [][]byte{}
	}
	for i, f := range h.Families {
		if err := f.Validate(); err != nil {
			return nil, fmt.Errorf("export: header: %w", err)
		}
		fj := familyJSON{Name: f.Name, MaxVersions: f.MaxVersions, TTLMicros: f.TTL.Microseconds(),
			GCRule: f.GCRule.String(), Compression: f.Compression.String(), Bloom: f.Bloom.String(),
			BlockSize: f.BlockSize, InMemory: f.InMemory, Type: f.ValueType.String()}
		if f.GC != families.GCUnion {
			fj.GC = f.GC.String()
		}
		if f.DeclaredType != "" {
			fj.DeclaredType = []byte(f.DeclaredType)
		}
		j.Families[i] = fj
	}
	return json.Marshal(j)
}

// DecodeHeader parses and checks a header EncodeHeader made; the error
// says what is wrong.
func DecodeHeader(b []byte) (Header, error) {
	var j headerJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return Header{}, fmt.Errorf("export: header is not a JSON header object: %v", err)
	}
	if dec.More() {
		return Header{}, errors.New("export: text after the header object")
	}
	if j.Format == nil {
		return Header{}, fmt.Errorf("export: header has no %q field", headerTag)
	}
	if *j.Format != FormatVersion {
		return Header{}, fmt.Errorf("export: header format %d is not %d, the one this tabula reads; import it with a tabula of that version", *j.Format, FormatVersion)
	}
	h := Header{Table: j.Table, AsOf: j.AsOf, Start: j.Start, End: j.End, Splits: j.Splits, SplitThreshold: j.SplitThreshold}
	// Empty is none: the encoder leaves empty fields out.
	if len(h.Start) == 0 {
		h.Start = nil
	}
	if len(h.End) == 0 {
		h.End = nil
	}
	if len(h.Splits) == 0 {
		h.Splits = nil
	}
	if h.AsOf < 0 {
		return Header{}, fmt.Errorf("export: header as_of %d is negative", h.AsOf)
	}
	if h.SplitThreshold < 0 {
		return Header{}, fmt.Errorf("export: header split_threshold %d is negative", h.SplitThreshold)
	}
	for i, s := range h.Splits {
		if err := cell.ValidateRow(s); err != nil {
			return Header{}, fmt.Errorf("export: header split %d: %w", i, err)
		}
		if i > 0 && bytes.Compare(h.Splits[i-1], s) >= 0 {
			return Header{}, fmt.Errorf("export: header splits are not in increasing key order at %d", i)
		}
	}
	seen := map[string]bool{}
	for _, fj := range j.Families {
		f, err := fj.family()
		if err != nil {
			return Header{}, fmt.Errorf("export: header family %q: %w", fj.Name, err)
		}
		if seen[f.Name] {
			return Header{}, fmt.Errorf("export: header names family %q twice", f.Name)
		}
		seen[f.Name] = true
		h.Families = append(h.Families, f)
	}
	return h, nil
}

func (fj familyJSON) family() (families.Family, error) {
	f := families.Family{Name: fj.Name, MaxVersions: fj.MaxVersions, BlockSize: fj.BlockSize,
		InMemory: fj.InMemory, DeclaredType: string(fj.DeclaredType)}
	if fj.TTLMicros < 0 || fj.TTLMicros > int64(1<<62)/int64(time.Microsecond) {
		return f, fmt.Errorf("ttl_micros %d is out of range", fj.TTLMicros)
	}
	f.TTL = time.Duration(fj.TTLMicros) * time.Microsecond
	var err error
	if fj.GC != "" {
		if f.GC, err = families.ParseGCMode(fj.GC); err != nil {
			return f, err
		}
	}
	if fj.GCRule != "" {
		if f.GCRule, err = families.ParseGCRule(fj.GCRule); err != nil {
			return f, err
		}
	}
	if f.Compression, err = families.ParseCompression(fj.Compression); err != nil {
		return f, err
	}
	if f.Bloom, err = families.ParseBloom(fj.Bloom); err != nil {
		return f, err
	}
	if f.ValueType, err = families.ParseValueType(fj.Type); err != nil {
		return f, err
	}
	return f, f.Validate()
}
