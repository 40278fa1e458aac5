package manifest

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// FuzzLoad feeds arbitrary bytes to the MANIFEST decoder: no panic; either
// ErrCorrupt, or a state that encodes and decodes back to itself. Each input
// is also tried with a valid checksum trailer appended, so that the fuzzer
// reaches the header and state decoding behind the checksum.
func FuzzLoad(f *testing.F) {
	good, _ := encode(sampleState())
	zero, _ := encode(State{})
	f.Add(good)
	f.Add(zero)
	f.Add(good[:len(good)/2])
	f.Add([]byte{})
	f.Add([]byte("tabula-manifest 1\n{}\ncrc32c 00000000\n"))
	f.Add([]byte("tabula-manifest 1\n{\"files\":[{\"family\":\"f\",\"path\":\"p\",\"lower\":\"AA==\"}]}\n"))
	f.Add([]byte("tabula-manifest 1\n{\"range_end\":\"\",\"files\":[{\"family\":\"f\",\"path\":\"p\",\"upper\":\"\"}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		check(t, data)
		check(t, seal(bytes.Clone(data)))
	})
}

// check decodes data and, if it decodes, checks that the state survives an
// encode/decode round trip.
func check(t *testing.T, data []byte) {
	s, err := decode("MANIFEST", data)
	if err != nil {
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("error not wrapping ErrCorrupt: %v", err)
		}
		return
	}
	b, err := encode(s)
	if err != nil {
		t.Fatal(err)
	}
	again, err := decode("MANIFEST", b)
	if err != nil || !reflect.DeepEqual(again, s) {
		t.Fatalf("re-encoded state differs: %+v vs %+v, %v", again, s, err)
	}
}
