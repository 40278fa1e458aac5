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
	p := parser{b: bytes.TrimRight(line, "\r\n")}
	if !p.lit(`{"key":"`) {
		return Row{}, false
	}
	if r.Key, ok = p.base64(); !ok || !p.lit(`","cells":[`) {
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
		c.Family = string(fam)
		if c.Qualifier, ok = p.base64(); !ok || !p.lit(`","timestamp":`) {
			return Row{}, false
		}
		if c.Timestamp, ok = p.uint(); !ok || !p.lit(`,"value":"`) {
			return Row{}, false
		}
		if c.Value, ok = p.base64(); !ok || !p.lit(`"}`) {
			return Row{}, false
		}
		r.Cells = append(r.Cells, c)
		if p.lit("]}") {
			return r, len(p.b) == 0
		}
		if !p.lit(",") {
			return Row{}, false
		}
	}
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

func (p *parser) base64() ([]byte, bool) {
	s, ok := p.str()
	if !ok {
		return nil, false
	}
	out := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Strict().Decode(out, s)
	if err != nil {
		return nil, false
	}
	return out[:n], true
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
