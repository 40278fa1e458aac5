package convert

import (
	"bytes"
	"testing"
)

// A message encoded outside RowBatch goes out as the bytes appended to
// its MessageBuffer, once: the codec takes them, and a second send fails
// rather than send a buffer the pool may have handed out again.
func TestCodecSendsAnEncodedMessageAsItIs(t *testing.T) {
	buf := MessageBuffer()
	if len(*buf) != 0 || cap(*buf) < rowBatchCap {
		t.Fatalf("MessageBuffer: len %d cap %d, want empty with room for a batch", len(*buf), cap(*buf))
	}
	want := []byte{0x0a, 0x03, 'a', 'b', 'c'}
	*buf = append(*buf, want...)
	m := EncodedMessage(buf)
	out, err := Codec{}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Materialize(); !bytes.Equal(got, want) {
		t.Fatalf("sent %x, want %x", got, want)
	}
	out.Free()
	if _, err := (Codec{}).Marshal(m); err == nil {
		t.Fatal("a message sent twice was sent")
	}
}
