package sharedlog

import (
	"bytes"
	"errors"
	"testing"

	"github.com/tabuladb/tabula/wal"
)

// FuzzParseTag: parseTag never panics on arbitrary bytes; it either fails
// with wal.ErrCorrupt or splits them into slices of the input; and
// it returns the tablet, epoch and payload of every record appendTag
// tagged.
func FuzzParseTag(f *testing.F) {
	f.Add([]byte{}, "users/1", uint64(3))
	f.Add(appendTag(nil, "users/1", 3), "", uint64(0))
	f.Add(append(appendTag(nil, "orders/9", 1<<63), "payload"...), "t", uint64(1<<64-1))
	f.Add([]byte{0x80}, "\x00\xff", uint64(128))                                                     // unterminated length
	f.Add([]byte{5, 'a', 'b'}, "a", uint64(1))                                                       // length past the end
	f.Add([]byte{2, 'a', 'b'}, "a", uint64(1))                                                       // no epoch
	f.Add([]byte{1, 'a', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, "", uint64(0)) // epoch overflows
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, "", uint64(0))         // huge length
	f.Fuzz(func(t *testing.T, data []byte, tablet string, epoch uint64) {
		tb, e, rest, err := parseTag(data)
		if err != nil {
			if !errors.Is(err, wal.ErrCorrupt) {
				t.Fatalf("parseTag(%x): error not wrapping ErrCorrupt: %v", data, err)
			}
		} else {
			if len(tb)+len(rest) > len(data) || !bytes.HasSuffix(data, rest) || !bytes.Contains(data, tb) {
				t.Fatalf("parseTag(%x) = %x, %d, %x: not parts of the input", data, tb, e, rest)
			}
		}

		rec := append(appendTag(nil, tablet, epoch), data...)
		tb, e, rest, err = parseTag(rec)
		if err != nil || string(tb) != tablet || e != epoch || !bytes.Equal(rest, data) {
			t.Fatalf("parseTag(appendTag(%q, %d) + %x) = %q, %d, %x, %v", tablet, epoch, data, tb, e, rest, err)
		}
	})
}

// TestParseTagTruncated: every proper prefix of a tag is an error, the
// whole tag parses with an empty payload.
func TestParseTagTruncated(t *testing.T) {
	for _, tc := range []struct {
		tablet string
		epoch  uint64
	}{{"", 0}, {"t", 1}, {"users/1", 300}, {string(make([]byte, 200)), 1<<64 - 1}} {
		tag := appendTag(nil, tc.tablet, tc.epoch)
		for n := range len(tag) {
			if _, _, _, err := parseTag(tag[:n]); !errors.Is(err, wal.ErrCorrupt) {
				t.Fatalf("tag of %q at %d cut to %d of %d bytes: err = %v, want ErrCorrupt", tc.tablet, tc.epoch, n, len(tag), err)
			}
		}
		tb, e, rest, err := parseTag(tag)
		if err != nil || string(tb) != tc.tablet || e != tc.epoch || len(rest) != 0 {
			t.Fatalf("parseTag(tag of %q at %d) = %q, %d, %x, %v", tc.tablet, tc.epoch, tb, e, rest, err)
		}
	}
}
