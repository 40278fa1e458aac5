package gateway

import (
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tabuladb/tabula/api/convert"
)

// A scan's answer is rows of chunks, and building each chunk as a proto
// (a CellChunk, a StringValue and a BytesValue per cell) only for gRPC's
// codec to walk them again cost the gateway about as much as reading the
// rows from Tabula. wireSink writes the chunks' encoding straight into a
// buffer of convert's pool, which convert.Codec (the gateway's server
// codec, Start) sends as it is: the bytes are the google.bigtable.v2
// ReadRowsResponse encoding, as proto.Marshal would write it, so any
// client reads them.
//
//	ReadRowsResponse:  repeated CellChunk chunks = 1
//	CellChunk:         bytes row_key = 1                     (when not empty)
//	                   StringValue family_name = 2           (when set)
//	                   BytesValue qualifier = 3              (when set)
//	                   int64 timestamp_micros = 4            (when not 0)
//	                   repeated string labels = 5
//	                   bytes value = 6                       (when not empty)
//	                   int32 value_size = 7                  (when not 0)
//	                   bool commit_row = 9                   (when true)
//	StringValue, BytesValue: value = 1                        (when not empty)
//
// The field numbers of those messages.
const (
	respChunks = 1 // ReadRowsResponse.chunks

	chunkRowKey    = 1 // CellChunk.row_key
	chunkFamily    = 2 // CellChunk.family_name
	chunkQualifier = 3 // CellChunk.qualifier
	chunkTimestamp = 4 // CellChunk.timestamp_micros
	chunkLabels    = 5 // CellChunk.labels
	chunkValue     = 6 // CellChunk.value
	chunkValueSize = 7 // CellChunk.value_size
	chunkCommitRow = 9 // CellChunk.commit_row

	wrapperValue = 1 // StringValue.value, BytesValue.value
)

// wireSink writes a chunkWriter's messages as bytes (see above). The
// chunks are copied as they come, so the rows they came from may change
// right after.
type wireSink struct {
	stream grpc.ServerStream // whose codec is convert.Codec
	buf    *[]byte           // the message being built; nil before its first chunk
}

func (s *wireSink) add(c *chunk) {
	if s.buf == nil {
		s.buf = convert.MessageBuffer()
	}
	*s.buf = appendChunk(*s.buf, c)
}

func (s *wireSink) send() error {
	m := convert.EncodedMessage(s.buf)
	s.buf = nil
	return s.stream.SendMsg(m)
}

// appendChunk appends c as a ReadRowsResponse.chunks entry.
func appendChunk(b []byte, c *chunk) []byte {
	b = protowire.AppendTag(b, respChunks, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(chunkSize(c)))
	b = convert.AppendBytesField(b, chunkRowKey, c.rowKey)
	if c.hasFamily {
		b = protowire.AppendTag(b, chunkFamily, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(wrapperSize(len(c.family))))
		if len(c.family) > 0 {
			b = protowire.AppendTag(b, wrapperValue, protowire.BytesType)
			b = protowire.AppendString(b, c.family)
		}
	}
	if c.hasQualifier {
		b = protowire.AppendTag(b, chunkQualifier, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(wrapperSize(len(c.qualifier))))
		b = convert.AppendBytesField(b, wrapperValue, c.qualifier)
	}
	if c.timestamp != 0 {
		b = protowire.AppendTag(b, chunkTimestamp, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(c.timestamp))
	}
	for _, l := range c.labels {
		b = protowire.AppendTag(b, chunkLabels, protowire.BytesType)
		b = protowire.AppendString(b, l)
	}
	b = convert.AppendBytesField(b, chunkValue, c.value)
	if c.valueSize != 0 {
		b = protowire.AppendTag(b, chunkValueSize, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(int64(c.valueSize)))
	}
	if c.commit {
		b = protowire.AppendTag(b, chunkCommitRow, protowire.VarintType)
		b = protowire.AppendVarint(b, 1)
	}
	return b
}

// chunkSize is the size of c's CellChunk message as appendChunk writes it.
func chunkSize(c *chunk) int {
	n := 0
	if len(c.rowKey) > 0 {
		n += protowire.SizeTag(chunkRowKey) + protowire.SizeBytes(len(c.rowKey))
	}
	if c.hasFamily {
		n += protowire.SizeTag(chunkFamily) + protowire.SizeBytes(wrapperSize(len(c.family)))
	}
	if c.hasQualifier {
		n += protowire.SizeTag(chunkQualifier) + protowire.SizeBytes(wrapperSize(len(c.qualifier)))
	}
	if c.timestamp != 0 {
		n += protowire.SizeTag(chunkTimestamp) + protowire.SizeVarint(uint64(c.timestamp))
	}
	for _, l := range c.labels {
		n += protowire.SizeTag(chunkLabels) + protowire.SizeBytes(len(l))
	}
	if len(c.value) > 0 {
		n += protowire.SizeTag(chunkValue) + protowire.SizeBytes(len(c.value))
	}
	if c.valueSize != 0 {
		n += protowire.SizeTag(chunkValueSize) + protowire.SizeVarint(uint64(int64(c.valueSize)))
	}
	if c.commit {
		n += protowire.SizeTag(chunkCommitRow) + 1
	}
	return n
}

// wrapperSize is the size of a StringValue or BytesValue of n bytes.
func wrapperSize(n int) int {
	if n == 0 {
		return 0
	}
	return protowire.SizeTag(wrapperValue) + protowire.SizeBytes(n)
}
