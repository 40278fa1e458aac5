package sstable

import (
	"errors"
	"fmt"
	"sync"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/tabuladb/tabula/families"
)

// Block types stored in the trailer; they equal the families.Compression values.
const (
	blockTypeNone   = byte(families.CompressionNone)
	blockTypeSnappy = byte(families.CompressionSnappy)
	blockTypeZstd   = byte(families.CompressionZstd)
)

// The zstd encoder and decoder are created without a stream, so they start
// no goroutines; EncodeAll and DecodeAll are safe for concurrent use.
var (
	zstdOnce sync.Once
	zstdEnc  *zstd.Encoder
	zstdDec  *zstd.Decoder
	zstdErr  error
)

func zstdCodecs() (*zstd.Encoder, *zstd.Decoder, error) {
	zstdOnce.Do(func() {
		zstdEnc, zstdErr = zstd.NewWriter(nil)
		if zstdErr != nil {
			return
		}
		zstdDec, zstdErr = zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(0),
			zstd.WithDecoderMaxMemory(maxBlockSize))
	})
	return zstdEnc, zstdDec, zstdErr
}

// compressBlock compresses raw into dst's storage and returns the bytes to
// store and their type. It stores raw as it is when compression does not
// save at least 12.5%.
func compressBlock(c families.Compression, raw, dst []byte) ([]byte, byte, error) {
	var out []byte
	switch c {
	case families.CompressionNone:
		return raw, blockTypeNone, nil
	case families.CompressionSnappy:
		out = snappy.Encode(dst[:cap(dst)], raw)
	case families.CompressionZstd:
		enc, _, err := zstdCodecs()
		if err != nil {
			return nil, 0, err
		}
		out = enc.EncodeAll(raw, dst[:0])
	default:
		return nil, 0, fmt.Errorf("sstable: unknown compression %v", c)
	}
	if len(out) > len(raw)-len(raw)/8 {
		return raw, blockTypeNone, nil
	}
	return out, byte(c), nil
}

// Parts of a corruption message, never returned alone: corruptf puts the
// package, the file and the block in front, so they carry no prefix.
var errUnknownBlockType = errors.New("unknown block type")

// decompressBlock returns the decoded block of stored bytes of type typ.
// An uncompressed block is returned as it is; a compressed one is decoded
// into fresh memory that never aliases stored (readers recycle stored,
// and decoded blocks live on their own: see blockbuf.go).
func decompressBlock(typ byte, stored []byte) ([]byte, error) {
	switch typ {
	case blockTypeNone:
		return stored, nil
	case blockTypeSnappy:
		n, err := snappy.DecodedLen(stored)
		if err != nil {
			return nil, err
		}
		if n > maxBlockSize {
			return nil, errBlockTooLarge
		}
		return snappy.Decode(nil, stored)
	case blockTypeZstd:
		_, dec, err := zstdCodecs()
		if err != nil {
			return nil, err
		}
		return dec.DecodeAll(stored, nil)
	}
	return nil, errUnknownBlockType
}
