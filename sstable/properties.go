package sstable

import (
	"encoding/binary"
	"errors"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
)

// Properties describe a finished file. The counts and ranges come from the
// keys, decoded with cell.DecodeKey; a key that does not decode counts only
// in NumEntries and the sizes.
type Properties struct {
	// NumEntries counts every entry; NumCells the KindSet entries;
	// NumDeleteFamily and NumDeleteColumn the tombstones.
	NumEntries, NumCells, NumDeleteFamily, NumDeleteColumn uint64
	// MinTimestamp and MaxTimestamp span the KindSet entries' timestamps
	// (µs); both are 0 when NumCells is 0.
	MinTimestamp, MaxTimestamp int64
	// MinSeq and MaxSeq span the sequence numbers of all entries.
	MinSeq, MaxSeq uint64
	// SmallestKey and LargestKey are the first and last keys (nil when empty).
	SmallestKey, LargestKey []byte
	// NumDataBlocks counts the data blocks.
	NumDataBlocks uint64
	// RawKeySize and RawValueSize sum the keys' and values' lengths;
	// DataSize sums the data blocks' sizes on disk (with trailers);
	// FileSize is the whole file's size.
	RawKeySize, RawValueSize, DataSize, FileSize uint64
	// Compression and Bloom are the options the file was written with.
	Compression families.Compression
	Bloom       families.Bloom
}

// observe accounts for one entry.
func (p *Properties) observe(key, value []byte) {
	if p.NumEntries == 0 {
		p.SmallestKey = append([]byte(nil), key...)
	}
	p.NumEntries++
	p.RawKeySize += uint64(len(key))
	p.RawValueSize += uint64(len(value))
	kind, ts, seq, err := cell.DecodeKeyKind(key)
	if err != nil {
		return
	}
	if p.NumCells+p.NumDeleteFamily+p.NumDeleteColumn == 0 {
		p.MinSeq, p.MaxSeq = seq, seq
	} else {
		p.MinSeq, p.MaxSeq = min(p.MinSeq, seq), max(p.MaxSeq, seq)
	}
	switch kind {
	case cell.KindDeleteFamily:
		p.NumDeleteFamily++
	case cell.KindDeleteColumn:
		p.NumDeleteColumn++
	case cell.KindSet:
		if p.NumCells == 0 {
			p.MinTimestamp, p.MaxTimestamp = ts, ts
		} else {
			p.MinTimestamp = min(p.MinTimestamp, ts)
			p.MaxTimestamp = max(p.MaxTimestamp, ts)
		}
		p.NumCells++
	}
}

// Properties block encoding (stored uncompressed, with the usual trailer):
//
//	uvarint version (1)
//	uvarint NumEntries, NumCells, NumDeleteFamily, NumDeleteColumn
//	varint  MinTimestamp, MaxTimestamp
//	uvarint MinSeq, MaxSeq, NumDataBlocks, RawKeySize, RawValueSize, DataSize
//	byte    Compression, byte Bloom
//	uvarint len(SmallestKey), SmallestKey, uvarint len(LargestKey), LargestKey
//
// FileSize is not stored: the reader takes it from the file.
const propertiesVersion = 1

func (p *Properties) encode() []byte {
	b := binary.AppendUvarint(nil, propertiesVersion)
	for _, v := range []uint64{p.NumEntries, p.NumCells, p.NumDeleteFamily, p.NumDeleteColumn} {
		b = binary.AppendUvarint(b, v)
	}
	b = binary.AppendVarint(b, p.MinTimestamp)
	b = binary.AppendVarint(b, p.MaxTimestamp)
	for _, v := range []uint64{p.MinSeq, p.MaxSeq, p.NumDataBlocks, p.RawKeySize, p.RawValueSize, p.DataSize} {
		b = binary.AppendUvarint(b, v)
	}
	b = append(b, byte(p.Compression), byte(p.Bloom))
	for _, k := range [][]byte{p.SmallestKey, p.LargestKey} {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
	}
	return b
}

// Parts of a corruption message, never returned alone: corruptf puts the
// package, the file and the block in front, so they carry no prefix.
var errBadProperties = errors.New("bad properties encoding")

// propDecoder reads fields and remembers the first failure.
type propDecoder struct {
	b   []byte
	err bool
}

func (d *propDecoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *propDecoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *propDecoder) byte() byte {
	if len(d.b) < 1 {
		d.err = true
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *propDecoder) bytes() []byte {
	n := d.uvarint()
	if d.err || n > uint64(len(d.b)) {
		d.err = true
		return nil
	}
	v := append([]byte(nil), d.b[:n]...)
	d.b = d.b[n:]
	return v
}

func decodeProperties(b []byte) (Properties, error) {
	var p Properties
	d := propDecoder{b: b}
	if d.uvarint() != propertiesVersion {
		return p, errBadProperties
	}
	p.NumEntries, p.NumCells = d.uvarint(), d.uvarint()
	p.NumDeleteFamily, p.NumDeleteColumn = d.uvarint(), d.uvarint()
	p.MinTimestamp, p.MaxTimestamp = d.varint(), d.varint()
	p.MinSeq, p.MaxSeq = d.uvarint(), d.uvarint()
	p.NumDataBlocks, p.RawKeySize, p.RawValueSize, p.DataSize = d.uvarint(), d.uvarint(), d.uvarint(), d.uvarint()
	p.Compression, p.Bloom = families.Compression(d.byte()), families.Bloom(d.byte())
	p.SmallestKey, p.LargestKey = d.bytes(), d.bytes()
	if d.err || len(d.b) != 0 {
		return Properties{}, errBadProperties
	}
	if p.NumEntries == 0 {
		p.SmallestKey, p.LargestKey = nil, nil
	}
	return p, nil
}
