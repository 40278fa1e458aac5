package cell

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/tabuladb/tabula/corruption"
)

// Kind says what an internal entry is. The numeric order matters: within a
// row a family tombstone sorts before every column, and within a column the
// column tombstones sort before the cells.
type Kind uint8

const (
	// KindDeleteFamily is a family tombstone: it hides every entry of the
	// row (in its family) with a smaller sequence number. A DeleteRow is
	// stored as one KindDeleteFamily per family.
	KindDeleteFamily Kind = 1
	// KindDeleteColumn is a column tombstone: it hides the column's entries
	// with a smaller sequence number whose timestamp lies in the range kept
	// in its value (see AppendDeleteRange).
	KindDeleteColumn Kind = 2
	// KindSet is a cell.
	KindSet Kind = 3
)

func (k Kind) String() string {
	switch k {
	case KindDeleteFamily:
		return "delete-family"
	case KindDeleteColumn:
		return "delete-column"
	case KindSet:
		return "set"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// IsTombstone reports whether the kind is a delete marker.
func (k Kind) IsTombstone() bool { return k == KindDeleteFamily || k == KindDeleteColumn }

// Key is an internal key of one family's entry. Family tombstones have no
// qualifier and timestamp 0; column tombstones have timestamp 0.
type Key struct {
	Row       []byte
	Qualifier []byte
	Timestamp int64
	Seq       uint64
	Kind      Kind
}

// ErrCorruptKey marks an encoded key that does not decode. It wraps
// corruption.ErrCorrupt.
var ErrCorruptKey = corruption.New("cell: corrupt key")

// The encoded key is byte-comparable (bytes.Compare gives the read order),
// so every layer below can treat keys as plain byte strings:
//
//	+-------------+-------+-----------------------+-----+------------+-------------+
//	| esc(row) 00 01 | class | esc(qualifier) 00 01 | sub | ^ts (8 BE) | ^seq (8 BE) |
//	+-------------+-------+-----------------------+-----+------------+-------------+
//	                        \_ only when class == classColumn _/
//
// esc() writes 0x00 as 0x00 0xFF, so the terminator 0x00 0x01 sorts before
// any continuation and a shorter string before its extensions. class is
// 0x01 for a family tombstone, 0x02 for a column entry; sub is 0x01 for a
// column tombstone, 0x02 for a cell. ^ts and ^seq are bitwise complements,
// so newer timestamps and later sequence numbers sort first. Timestamps
// are never negative, so their uint64 complement keeps their order.
const (
	classFamily = 0x01
	classColumn = 0x02
	subDelete   = 0x01
	subCell     = 0x02
	trailerLen  = 16
)

func appendEscaped(dst, s []byte) []byte {
	for {
		i := bytes.IndexByte(s, 0)
		if i < 0 {
			break
		}
		dst = append(dst, s[:i+1]...)
		dst = append(dst, 0xFF)
		s = s[i+1:]
	}
	dst = append(dst, s...)
	return append(dst, 0x00, 0x01)
}

// readEscaped decodes an escaped string from b, returning it and the rest.
// The result aliases b when it holds no 0x00 byte.
func readEscaped(b []byte) (s, rest []byte, err error) {
	var out []byte
	copied := false
	for {
		// A byte loop rather than bytes.IndexByte: qualifiers are short
		// (often empty), and a scan decodes one per entry (escapedLen).
		i := 0
		for i < len(b) && b[i] != 0 {
			i++
		}
		if i+1 >= len(b) {
			return nil, nil, ErrCorruptKey
		}
		switch b[i+1] {
		case 0x01:
			if !copied {
				return b[:i:i], b[i+2:], nil
			}
			return append(out, b[:i]...), b[i+2:], nil
		case 0xFF:
			if !copied {
				out = make([]byte, 0, len(b))
				copied = true
			}
			out = append(out, b[:i+1]...)
			b = b[i+2:]
		default:
			return nil, nil, ErrCorruptKey
		}
	}
}

// KeyLen returns the length of the encoding of k, so that a caller can
// size a buffer and encode into it with AppendKey(buf[:0:n], k) without a
// copy (the memtable encodes keys straight into its arena this way).
func KeyLen(k Key) int {
	n := escapedSize(k.Row) + 1 + trailerLen
	if k.Kind != KindDeleteFamily {
		n += escapedSize(k.Qualifier) + 1
	}
	return n
}

// escapedSize is len(appendEscaped(nil, s)).
func escapedSize(s []byte) int { return len(s) + bytes.Count(s, zeroByte) + 2 }

var zeroByte = []byte{0}

// AppendKey appends the encoding of k to dst.
func AppendKey(dst []byte, k Key) []byte {
	dst = appendEscaped(dst, k.Row)
	switch k.Kind {
	case KindDeleteFamily:
		dst = append(dst, classFamily)
	case KindDeleteColumn:
		dst = append(dst, classColumn)
		dst = appendEscaped(dst, k.Qualifier)
		dst = append(dst, subDelete)
	default:
		dst = append(dst, classColumn)
		dst = appendEscaped(dst, k.Qualifier)
		dst = append(dst, subCell)
	}
	dst = binary.BigEndian.AppendUint64(dst, ^uint64(k.Timestamp))
	return binary.BigEndian.AppendUint64(dst, ^k.Seq)
}

// DecodeKey decodes an encoded key. Row and Qualifier alias b unless they
// contain 0x00 bytes.
func DecodeKey(b []byte) (Key, error) {
	var k Key
	row, rest, err := readEscaped(b)
	if err != nil {
		return k, ErrCorruptKey
	}
	k.Row = row
	if err := decodeAfterRow(&k, rest); err != nil {
		return Key{}, err
	}
	return k, nil
}

// DecodeKeyInRow decodes an encoded key whose row prefix (see RowPrefix) the
// caller already knows: b[:prefixLen] is that prefix and row its decoded
// row, which the result's Row is set to. A scan decodes each row once
// instead of once per entry this way. It fails like DecodeKey on keys that
// do not decode after the prefix; the prefix itself is not checked.
func DecodeKeyInRow(b []byte, prefixLen int, row []byte) (Key, error) {
	var k Key
	err := DecodeKeyInRowTo(&k, b, prefixLen, row)
	return k, err
}

// DecodeKeyInRowTo is DecodeKeyInRow into *k, which a scan keeps in a slice
// of its own: a Key is too large to copy twice per entry. On error *k is
// zeroed.
func DecodeKeyInRowTo(k *Key, b []byte, prefixLen int, row []byte) error {
	// Every field is set (decodeAfterRow sets all but Row): *k is not
	// zeroed first, which a scan would pay once per entry.
	k.Row = row
	if prefixLen < 2 || prefixLen > len(b) {
		*k = Key{}
		return ErrCorruptKey
	}
	if err := decodeAfterRow(k, b[prefixLen:]); err != nil {
		*k = Key{}
		return err
	}
	return nil
}

// DecodeKeyKind decodes the kind, timestamp and sequence number of an
// encoded key without decoding its row or qualifier, so it never
// allocates: an SSTable writer observes every key it is given this way.
// It fails like DecodeKey on keys that do not decode.
func DecodeKeyKind(b []byte) (kind Kind, timestamp int64, seq uint64, err error) {
	n, err := escapedLen(b)
	if err != nil || n >= len(b) {
		return 0, 0, 0, ErrCorruptKey
	}
	rest := b[n:]
	switch rest[0] {
	case classFamily:
		kind, rest = KindDeleteFamily, rest[1:]
	case classColumn:
		q, err := escapedLen(rest[1:])
		if err != nil || 1+q >= len(rest) {
			return 0, 0, 0, ErrCorruptKey
		}
		switch rest[1+q] {
		case subDelete:
			kind = KindDeleteColumn
		case subCell:
			kind = KindSet
		default:
			return 0, 0, 0, ErrCorruptKey
		}
		rest = rest[2+q:]
	default:
		return 0, 0, 0, ErrCorruptKey
	}
	if len(rest) != trailerLen {
		return 0, 0, 0, ErrCorruptKey
	}
	return kind, int64(^binary.BigEndian.Uint64(rest)), ^binary.BigEndian.Uint64(rest[8:]), nil
}

// decodeAfterRow decodes what follows the row prefix of a key into k,
// setting every field but Row.
func decodeAfterRow(k *Key, rest []byte) error {
	if len(rest) < 1 {
		return ErrCorruptKey
	}
	switch rest[0] {
	case classFamily:
		k.Kind, k.Qualifier = KindDeleteFamily, nil
		rest = rest[1:]
	case classColumn:
		q, r, err := readEscaped(rest[1:])
		if err != nil || len(r) < 1 {
			return ErrCorruptKey
		}
		k.Qualifier = q
		switch r[0] {
		case subDelete:
			k.Kind = KindDeleteColumn
		case subCell:
			k.Kind = KindSet
		default:
			return ErrCorruptKey
		}
		rest = r[1:]
	default:
		return ErrCorruptKey
	}
	if len(rest) != trailerLen {
		return ErrCorruptKey
	}
	k.Timestamp = int64(^binary.BigEndian.Uint64(rest))
	k.Seq = ^binary.BigEndian.Uint64(rest[8:])
	return nil
}

// escapedLen returns the length of the escaped string (terminator
// included) at the head of b, without decoding it: scans use it to find a
// key's row prefix without allocating. A byte loop rather than
// bytes.IndexByte: rows are short and often hold several 0x00 bytes, and a
// call per 0x00 costs more than the loop.
func escapedLen(b []byte) (int, error) {
	for i := 0; i+1 < len(b); i++ {
		if b[i] != 0 {
			continue
		}
		switch b[i+1] {
		case 0x01:
			return i + 2, nil
		case 0xFF:
			i++
		default:
			return 0, ErrCorruptKey
		}
	}
	return 0, ErrCorruptKey
}

// RowPrefix returns the encoded row at the head of an encoded key (the
// escaped row and its terminator). Every key of one row shares it, and no
// key of another row starts with it.
func RowPrefix(encoded []byte) ([]byte, error) {
	n, err := escapedLen(encoded)
	if err != nil {
		return nil, err
	}
	return encoded[:n], nil
}

// AppendKeyRow appends the row encoded at the head of key (an encoded key,
// or a row prefix alone) to dst, and returns the result and the length of
// the row prefix (what RowPrefix returns). It finds and decodes the row in
// one pass, for scans that need both once per row. dst grows once (the
// row is never longer than key) and the row is copied byte by byte: rows
// are short and binary ones (ids, counters) hold several 0x00 bytes, and
// an append per escape cost more than the loop.
func AppendKeyRow(dst, key []byte) (row []byte, prefixLen int, err error) {
	n := len(dst)
	dst = slices.Grow(dst, len(key))
	out := dst[n : n+len(key)]
	j := 0
	for i := 0; i+1 < len(key); i++ {
		c := key[i]
		if c != 0 {
			out[j] = c
			j++
			continue
		}
		switch key[i+1] {
		case 0x01:
			return dst[:n+j], i + 2, nil
		case 0xFF:
			out[j] = 0
			j++
			i++
		default:
			return dst[:n], 0, ErrCorruptKey
		}
	}
	return dst[:n], 0, ErrCorruptKey
}

// ColumnPrefix returns the encoded row and qualifier at the head of an
// encoded key: what every entry of one column shares. For a family
// tombstone it returns the row prefix and ok=false.
func ColumnPrefix(encoded []byte) (prefix []byte, ok bool, err error) {
	_, rest, err := readEscaped(encoded)
	if err != nil || len(rest) < 1 {
		return nil, false, ErrCorruptKey
	}
	if rest[0] != classColumn {
		return encoded[:len(encoded)-len(rest)], false, nil
	}
	_, r, err := readEscaped(rest[1:])
	if err != nil {
		return nil, false, err
	}
	return encoded[:len(encoded)-len(r)], true, nil
}

// EncodeRow returns the row prefix of row: the smallest encoded key of the
// row, to seek to, and the exclusive bound of every row before it.
func EncodeRow(row []byte) []byte { return appendEscaped(make([]byte, 0, len(row)+2), row) }

// EncodeColumn returns the column prefix of (row, qualifier), the key to
// seek to for a column, and what a row+column bloom filter holds.
func EncodeColumn(row, qualifier []byte) []byte {
	dst := appendEscaped(make([]byte, 0, len(row)+len(qualifier)+5), row)
	dst = append(dst, classColumn)
	return appendEscaped(dst, qualifier)
}

// AppendDeleteRange encodes a column tombstone's timestamp range
// [start, end) as its value; end 0 means no upper bound.
func AppendDeleteRange(dst []byte, start, end int64) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(start))
	return binary.BigEndian.AppendUint64(dst, uint64(end))
}

// DecodeDeleteRange decodes a column tombstone's value.
func DecodeDeleteRange(v []byte) (start, end int64, err error) {
	if len(v) != 16 {
		return 0, 0, fmt.Errorf("cell: corrupt delete range of %d bytes", len(v))
	}
	return int64(binary.BigEndian.Uint64(v)), int64(binary.BigEndian.Uint64(v[8:])), nil
}

// DeleteRangeCovers reports whether a column tombstone's range covers ts.
func DeleteRangeCovers(start, end, ts int64) bool {
	return ts >= start && (end == 0 || ts < end)
}
