package rowfilter

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Byte strings in the filter language (docs/FILTERS.md "Strings") are
// written the way the tabula CLI prints keys and values: Go-quoted, with
// \xNN for each byte that is not valid UTF-8. Quote and Unquote are that
// one convention, so that what is printed can be typed back byte for byte.

// Quote returns b as a double-quoted string literal of the filter
// language: strconv.Quote of its bytes, so printable UTF-8 stays as it is,
// control characters and other unprintable runes are escaped, and bytes
// that are not UTF-8 are written \xNN.
func Quote(b []byte) string { return strconv.Quote(string(b)) }

// Unquote parses a whole string literal of the filter language
// ("..." with Go escapes, or `...` taken as it is) and returns its bytes.
func Unquote(s string) ([]byte, error) {
	b, n, err := unquotePrefix(s)
	if err != nil {
		return nil, err
	}
	if n != len(s) {
		return nil, &ParseError{Pos: n + 1, Msg: fmt.Sprintf("unexpected %q after the closing quote", s[n:])}
	}
	return b, nil
}

// unquotePrefix parses the string literal at the start of s and returns
// its bytes and its length in s. Inside "...", \ starts a Go escape
// (\xNN is the byte NN; \u and \U the UTF-8 of a code point; \a \b \f \n
// \r \t \v \\ \" and three octal digits as in Go); every other byte, also
// one that is not UTF-8, stands for itself. Inside `...` every byte
// stands for itself. Errors are *ParseError with 1-based positions in s.
func unquotePrefix(s string) (out []byte, n int, err error) {
	if s == "" || (s[0] != '"' && s[0] != '`') {
		return nil, 0, &ParseError{Pos: 1, Msg: `expected a string ("..." or ` + "`...`)"}
	}
	out = []byte{} // "" is an empty, non-nil byte string
	if s[0] == '`' {
		for i := 1; i < len(s); i++ {
			if s[i] == '`' {
				return append(out, s[1:i]...), i + 1, nil
			}
		}
		return nil, 0, &ParseError{Pos: 1, Msg: "string has no closing `"}
	}
	for i := 1; i < len(s); {
		switch c := s[i]; c {
		case '"':
			return out, i + 1, nil
		case '\\':
			v, multibyte, tail, err := strconv.UnquoteChar(s[i:], '"')
			if err != nil {
				return nil, 0, &ParseError{Pos: i + 1, Msg: fmt.Sprintf(`bad escape %s in a string; write \\ for a backslash (a regex's \d is "\\d", or use a `+"`raw string`)", escapeText(s[i:]))}
			}
			if multibyte { // \u and \U: a code point, in UTF-8
				out = utf8.AppendRune(out, v)
			} else { // \xNN, octal and the one-letter escapes: one byte
				out = append(out, byte(v))
			}
			i = len(s) - len(tail)
		default:
			out = append(out, c)
			i++
		}
	}
	return nil, 0, &ParseError{Pos: 1, Msg: `string has no closing "`}
}

// escapeText is the escape at the start of s, for messages.
func escapeText(s string) string {
	if len(s) > 2 {
		return s[:2]
	}
	return s
}
