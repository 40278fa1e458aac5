package convert

import (
	"encoding/binary"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tabuladb/tabula/internal/unzeroed"
)

// A scan's message of 1 MiB reaches the client's codec in 64 buffers,
// one per transport frame (gRPC's HTTP/2 frames carry 16 KiB). Joining
// them into one buffer before decoding copies the whole message once
// more, only for DecodeRows to copy each row out again: decodeFrames
// decodes the rows where they lie, and copies into a scratch buffer only
// the rows that straddle two frames (about one per frame for rows of
// 1 KB).

// frameStream reads bytes that lie in a sequence of buffers.
type frameStream struct {
	cur  []byte   // what is left of the current buffer
	rest [][]byte // the buffers after it
	left int      // the bytes left in all
}

func newFrameStream(bufs [][]byte) frameStream {
	s := frameStream{rest: bufs}
	for _, b := range bufs {
		s.left += len(b)
	}
	return s
}

// more reports whether a byte is left, moving to the next buffer with
// bytes if cur is used up.
func (s *frameStream) more() bool {
	for len(s.cur) == 0 && len(s.rest) > 0 {
		s.cur, s.rest = s.rest[0], s.rest[1:]
	}
	return len(s.cur) > 0
}

// peek copies up to len(dst) of the next bytes into dst, without
// consuming them, and returns what it copied.
func (s *frameStream) peek(dst []byte) []byte {
	n := copy(dst, s.cur)
	for _, b := range s.rest {
		if n == len(dst) {
			break
		}
		n += copy(dst[n:], b)
	}
	return dst[:n]
}

// read consumes len(dst) bytes into dst, reporting false if fewer are
// left.
func (s *frameStream) read(dst []byte) bool {
	for n := 0; n < len(dst); {
		if !s.more() {
			return false
		}
		c := copy(dst[n:], s.cur)
		s.cur, n, s.left = s.cur[c:], n+c, s.left-c
	}
	return true
}

// decodeFrames appends to rows the rows of a message that lies in bufs,
// in the buffers themselves (see above), as decode does with the joined
// message; ok is false for what it leaves to decode: a message with a
// row in parts, a field other than rows, or a malformed one (decode gives
// the answer, the error or the parts, on the joined bytes). scratch is
// reused for the rows that straddle buffers, and returned.
func (d *rowDecoder) decodeFrames(rows []WireRow, bufs [][]byte, scratch []byte) (_ []WireRow, _ []byte, ok bool) {
	s := newFrameStream(bufs)
	var hdr [2 * binary.MaxVarintLen64]byte // a tag and a length
	for s.more() {
		h := s.peek(hdr[:])
		num, typ, n := consumeTag(h)
		if n < 0 || num != respRows || typ != protowire.BytesType {
			return rows, scratch, false
		}
		size, m := protowire.ConsumeVarint(h[n:])
		if m < 0 || size > uint64(s.left) {
			return rows, scratch, false // and no scratch larger than the message
		}
		total := n + m + int(size)
		var field []byte
		if total <= len(s.cur) {
			field, s.cur, s.left = s.cur[:total], s.cur[total:], s.left-total
		} else {
			if cap(scratch) < total {
				scratch = unzeroed.Bytes(total)
			}
			field = scratch[:total]
			if !s.read(field) {
				return rows, scratch, false
			}
		}
		row, whole, err := d.decodeRow(field[n+m:])
		if err != nil || !whole {
			return rows, scratch, false
		}
		rows = append(rows, row)
	}
	return rows, scratch, true
}
