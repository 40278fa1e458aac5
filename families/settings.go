package families

import (
	"fmt"
	"strings"

	"github.com/tabuladb/tabula/cell"
)

// Compression is a family's SSTable block compression.
type Compression uint8

const (
	// CompressionNone stores blocks as they are.
	CompressionNone Compression = iota
	// CompressionSnappy compresses blocks with github.com/golang/snappy.
	CompressionSnappy
	// CompressionZstd compresses blocks with github.com/klauspost/compress/zstd.
	CompressionZstd
)

var compressionNames = []string{"none", "snappy", "zstd"}

func (c Compression) String() string {
	if int(c) < len(compressionNames) {
		return compressionNames[c]
	}
	return fmt.Sprintf("compression(%d)", uint8(c))
}

// ParseCompression parses "none", "snappy" or "zstd".
func ParseCompression(s string) (Compression, error) {
	for i, n := range compressionNames {
		if strings.EqualFold(s, n) {
			return Compression(i), nil
		}
	}
	return 0, cell.Invalidf("compression %q is not one of none, snappy, zstd", s)
}

// Bloom says what a family's SSTable bloom filters hold.
type Bloom uint8

const (
	// BloomNone builds no filter.
	BloomNone Bloom = iota
	// BloomRow adds each row key: point reads of a row skip files without it.
	BloomRow
	// BloomRowColumn adds each row key and each (row, qualifier): reads of
	// one column skip files without it, reads of a row still can.
	BloomRowColumn
)

var bloomNames = []string{"none", "row", "row+column"}

func (b Bloom) String() string {
	if int(b) < len(bloomNames) {
		return bloomNames[b]
	}
	return fmt.Sprintf("bloom(%d)", uint8(b))
}

// ParseBloom parses "none", "row" or "row+column".
func ParseBloom(s string) (Bloom, error) {
	for i, n := range bloomNames {
		if strings.EqualFold(s, n) {
			return Bloom(i), nil
		}
	}
	return 0, cell.Invalidf("bloom %q is not one of none, row, row+column", s)
}
