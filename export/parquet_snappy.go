package export

import (
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/golang/snappy"
)

// The Parquet library's Snappy codec encodes with klauspost's
// "better" Snappy encoder, which took 40% of a Parquet export's CPU time
// (docs/BENCHMARKS.md, "Export formats"); github.com/golang/snappy's
// encoder writes the same format (any Snappy decoder reads either) faster
// and compresses exported cells almost as well. Registered for the
// process: Tabula uses the Parquet library only here.
func init() {
	compress.RegisterCodec(compress.Codecs.Snappy, snappyCodec{})
}

// snappyCodec is compress.Codec (and its ErrorCodec) with golang/snappy.
type snappyCodec struct{}

func (snappyCodec) Encode(dst, src []byte) []byte { return snappyEncode(dst, src) }

func (snappyCodec) EncodeLevel(dst, src []byte, _ int) []byte { return snappyEncode(dst, src) }

// snappyEncode encodes into dst's capacity: the library passes a buffer
// it grew to CompressBound but of length 0 (bytes.Buffer.Bytes after
// Grow), and snappy.Encode, which looks at the length only, would
// allocate a new one for every page (half a GiB per 120 MB exported).
func snappyEncode(dst, src []byte) []byte {
	if n := snappy.MaxEncodedLen(len(src)); n >= 0 && cap(dst) >= n {
		dst = dst[:n]
	}
	return snappy.Encode(dst, src)
}

func (snappyCodec) CompressBound(n int64) int64 { return int64(snappy.MaxEncodedLen(int(n))) }

// Decode panics on damaged input as the interface wants; the library calls
// DecodeWithError instead (compress.ErrorCodec).
func (c snappyCodec) Decode(dst, src []byte) []byte {
	out, err := c.DecodeWithError(dst, src)
	if err != nil {
		panic(err)
	}
	return out
}

func (snappyCodec) DecodeWithError(dst, src []byte) ([]byte, error) {
	return snappy.Decode(dst, src)
}
