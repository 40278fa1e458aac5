package export

import (
	"bytes"
	"encoding/base64"
	"strconv"
)

// decodeCanonical parses a row line laid out exactly as AppendJSONLine
// writes it (field order, no spaces, no escapes, a non-negative timestamp
// without leading zeros), without encoding/json's reflection: an import
// spent half its client CPU in encoding/json (docs/BENCHMARKS.md "Export
// and import"). Any other line, valid JSON or not, gives ok false and is
// parsed by encoding/json, which says what is wrong; FuzzJSONLine checks
// that both parsers agree where this one accepts. The caller validates
// the fields.
func decodeCanonical(line []byte) (r Row, ok bool) {
	var d lineDecoder
	return d.canonical(line)
}

// lineDecoder decodes canonical lines into memory it hands out in chunks:
// a row's key, qualifiers and values are slices of one byte chunk, its
// cells a slice of one cell chunk, and family names the strings of the
// names seen before. A bulk load's client spent a third of its CPU on
// allocating them one by one (docs/BENCHMARKS.md "Export and import").
// The chunks are never written again once handed out, so rows stay valid
// for as long as their holders keep them.
type lineDecoder struct {
	chunk int // bytes of a new byte chunk (at least what a line needs); 0: exactly what it needs
	bytes []byte
	cells []Cell
	fams  []string
}

// decoderChunk is the byte chunk of a reader's decoder: a few hundred
// lines of the rows exports hold.
const decoderChunk = 64 << 10

// canonical parses line as decodeCanonical does.
func (d *lineDecoder) canonical(line []byte) (r Row, ok bool) {
	p := parser{b: bytes.TrimRight(line, "\r\n")}
	// The decoded bytes are at most 3/4 of the line's: one chunk holds
	// the whole row.
	if need := len(p.b); cap(d.bytes)-len(d.bytes) < need {
		d.bytes = make([]byte, 0, max(d.chunk, need))
	}
	if len(d.cells) == cap(d.cells) {
		d.cells = make([]Cell, 0, max(d.chunk/256, 4))
	}
	first := len(d.cells)
	if !p.lit(`{"key":"`) {
		return Row{}, false
	}
	if r.Key, ok = p.base64(&d.bytes); !ok || !p.lit(`","cells":[`) {
		return Row{}, false
	}
	for {
		var c Cell
		if !p.lit(`{"family":"`) {
			return Row{}, false
		}
		fam, ok := p.str()
		if !ok || !p.lit(`","qualifier":"`) {
			return Row{}, false
		}
		c.Family = d.family(fam)
		if c.Qualifier, ok = p.base64(&d.bytes); !ok || !p.lit(`","timestamp":`) {
			return Row{}, false
		}
		if c.Timestamp, ok = p.uint(); !ok || !p.lit(`,"value":"`) {
			return Row{}, false
		}
		if c.Value, ok = p.base64(&d.bytes); !ok || !p.lit(`"}`) {
			return Row{}, false
		}
		if len(d.cells) == cap(d.cells) {
			// The row outgrew the chunk: it moves to a new one.
			moved := make([]Cell, len(d.cells)-first, max(2*(len(d.cells)-first), d.chunk/256, 4))
			copy(moved, d.cells[first:])
			d.cells, first = moved, 0
		}
		d.cells = append(d.cells, c)
		if p.lit("]}") {
			r.Cells = d.cells[first:len(d.cells):len(d.cells)]
			return r, len(p.b) == 0
		}
		if !p.lit(",") {
			return Row{}, false
		}
	}
}

// family returns name as a string, the one made for it before if any
// (tables have few families).
func (d *lineDecoder) family(name []byte) string {
	for _, f := range d.fams {
		if f == string(name) {
			return f
		}
	}
	f := string(name)
	if len(d.fams) < 64 {
		d.fams = append(d.fams, f)
	}
	return f
}

type parser struct{ b []byte }

func (p *parser) lit(s string) bool {
	if len(p.b) < len(s) || string(p.b[:len(s)]) != s {
		return false
	}
	p.b = p.b[len(s):]
	return true
}

// str returns the bytes up to the next '"', refusing escapes and control
// characters (which the JSON decoder handles or refuses).
func (p *parser) str() ([]byte, bool) {
	for i, c := range p.b {
		switch {
		case c == '"':
			s := p.b[:i]
			p.b = p.b[i:]
			return s, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
	}
	return nil, false
}

func (p *parser) base64(arena *[]byte) ([]byte, bool) {
	s, ok := p.str()
	if !ok {
		return nil, false
	}
	a := *arena
	start := len(a)
	out := a[start : start+base64.StdEncoding.DecodedLen(len(s))]
	n, err := base64.StdEncoding.Strict().Decode(out, s)
	if err != nil {
		return nil, false
	}
	*arena = a[:start+n]
	return out[:n:n], true
}

// uint reads a JSON integer >= 0 that fits an int64.
func (p *parser) uint() (int64, bool) {
	i := 0
	for i < len(p.b) && p.b[i] >= '0' && p.b[i] <= '9' {
		i++
	}
	if i == 0 || (i > 1 && p.b[0] == '0') {
		return 0, false
	}
	n, err := strconv.ParseInt(string(p.b[:i]), 10, 64)
	if err != nil {
		return 0, false
	}
	p.b = p.b[i:]
	return n, true
}
