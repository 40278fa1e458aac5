package export

import (
	"bufio"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
)

// ErrAvroSchema is returned (wrapped) when an Avro file's schema is not
// Cloud Bigtable's row schema.
var ErrAvroSchema = errors.New("export: avro file is not in Cloud Bigtable's row schema")

// errAvroCorrupt is wrapped by every error about a damaged Avro file.
var errAvroCorrupt = errors.New("export: avro: damaged file")

// avroMaxBlock bounds one decompressed block (a block holds at least one
// row, and a Bigtable row is at most 256 MiB): a file cannot make a reader
// allocate more than this per block, nor more than its compression could
// hold (avroDecodedBound).
const avroMaxBlock = 1 << 30

type avroReader struct {
	r     *bufio.Reader
	sync  [16]byte
	codec string
	block []byte // the decompressed block being read
	pos   int
	count int64 // rows left in block
	raw   bytes.Buffer
	cells []Cell
	zstd  *zstd.Decoder
}

// NewAvroReader opens an Avro object container file of BigtableRow
// records, as Tabula and the Dataflow templates write it (codecs null,
// deflate, snappy and zstandard). It checks the file's schema against the
// row schema and returns the header from the file metadata
// (HeaderMetadataKey), nil when there is none.
func NewAvroReader(r io.Reader) (RowReader, []byte, error) {
	a := &avroReader{r: bufio.NewReaderSize(r, 64<<10)}
	var magic [4]byte
	if _, err := io.ReadFull(a.r, magic[:]); err != nil || magic != avroMagic {
		return nil, nil, fmt.Errorf("%w: not an Avro object container file", errAvroCorrupt)
	}
	meta := map[string][]byte{}
	for {
		n, err := a.readBlockCount()
		if err != nil {
			return nil, nil, err
		}
		if n == 0 {
			break
		}
		for ; n > 0; n-- {
			k, err := a.readBytes()
			if err != nil {
				return nil, nil, err
			}
			v, err := a.readBytes()
			if err != nil {
				return nil, nil, err
			}
			meta[string(k)] = v
		}
	}
	if _, err := io.ReadFull(a.r, a.sync[:]); err != nil {
		return nil, nil, fmt.Errorf("%w: header: %v", errAvroCorrupt, err)
	}
	if err := checkAvroSchema(meta["avro.schema"]); err != nil {
		return nil, nil, err
	}
	a.codec = string(meta["avro.codec"])
	switch a.codec {
	case "", "null":
		a.codec = "null"
	case "deflate", "snappy":
	case "zstandard":
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(avroMaxBlock))
		if err != nil {
			return nil, nil, err
		}
		a.zstd = d
	default:
		return nil, nil, fmt.Errorf("export: avro codec %q is not supported (null, deflate, snappy, zstandard)", a.codec)
	}
	return a, meta[HeaderMetadataKey], nil
}

// readLong reads one zig-zag varint long from the file.
func (a *avroReader) readLong() (int64, error) {
	u, err := binary.ReadUvarint(a.r)
	if err != nil {
		if err == io.EOF {
			return 0, io.ErrUnexpectedEOF
		}
		return 0, fmt.Errorf("%w: %v", errAvroCorrupt, err)
	}
	return int64(u>>1) ^ -int64(u&1), nil
}

// readBlockCount reads a map's or array's block count; a negative count is
// followed by the block's byte size, which is not needed here.
func (a *avroReader) readBlockCount() (int64, error) {
	n, err := a.readLong()
	if err != nil {
		return 0, err
	}
	if n < 0 {
		if n == -n { // math.MinInt64
			return 0, fmt.Errorf("%w: block count", errAvroCorrupt)
		}
		n = -n
		if _, err := a.readLong(); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// readN reads n bytes of the file into a fresh slice that grows only as
// the bytes arrive, so that a damaged length cannot allocate more than the
// file holds.
func (a *avroReader) readN(n int64) ([]byte, error) {
	if n < 0 {
		return nil, fmt.Errorf("%w: negative length", errAvroCorrupt)
	}
	a.raw.Reset()
	if _, err := io.CopyN(&a.raw, a.r, n); err != nil {
		return nil, fmt.Errorf("%w: %d bytes claimed: %v", errAvroCorrupt, n, err)
	}
	return bytes.Clone(a.raw.Bytes()), nil
}

func (a *avroReader) readBytes() ([]byte, error) {
	n, err := a.readLong()
	if err != nil {
		return nil, err
	}
	return a.readN(n)
}

// nextBlock reads and decompresses the next block; io.EOF at the end of
// the file.
func (a *avroReader) nextBlock() error {
	if _, err := a.r.Peek(1); err == io.EOF {
		return io.EOF
	}
	count, err := a.readLong()
	if err != nil {
		return err
	}
	size, err := a.readLong()
	if err != nil {
		return err
	}
	data, err := a.readN(size)
	if err != nil {
		return err
	}
	var sync [16]byte
	if _, err := io.ReadFull(a.r, sync[:]); err != nil || sync != a.sync {
		return fmt.Errorf("%w: block without its sync marker", errAvroCorrupt)
	}
	if a.block, err = a.decompress(data); err != nil {
		return err
	}
	// Every row takes at least two bytes (key length, end of cells).
	if count < 0 || count > int64(len(a.block))/2 {
		return fmt.Errorf("%w: block of %d rows in %d bytes", errAvroCorrupt, count, len(a.block))
	}
	a.count, a.pos = count, 0
	return nil
}

// avroDecodedBound is the most a block of n compressed bytes can
// decompress to: snappy's copies expand at most 64 bytes from 3; deflate at
// most 258 from about a quarter of a byte (1032:1); both below avroMaxBlock.
func avroDecodedBound(n int, ratio int) int {
	return min(n*ratio+64, avroMaxBlock)
}

func (a *avroReader) decompress(data []byte) ([]byte, error) {
	switch a.codec {
	case "null":
		return data, nil
	case "snappy":
		if len(data) < 4 {
			return nil, fmt.Errorf("%w: snappy block without checksum", errAvroCorrupt)
		}
		src := data[:len(data)-4]
		n, err := snappy.DecodedLen(src)
		if err != nil || n > avroDecodedBound(len(src), 22) {
			return nil, fmt.Errorf("%w: snappy block", errAvroCorrupt)
		}
		out, err := snappy.Decode(nil, src)
		if err != nil {
			return nil, fmt.Errorf("%w: snappy block: %v", errAvroCorrupt, err)
		}
		if crc32.ChecksumIEEE(out) != binary.BigEndian.Uint32(data[len(data)-4:]) {
			return nil, fmt.Errorf("%w: snappy block checksum", errAvroCorrupt)
		}
		return out, nil
	case "deflate":
		limit := int64(avroDecodedBound(len(data), 1032))
		var out bytes.Buffer
		n, err := io.Copy(&out, io.LimitReader(flate.NewReader(bytes.NewReader(data)), limit+1))
		if err != nil || n > limit {
			return nil, fmt.Errorf("%w: deflate block: %v", errAvroCorrupt, err)
		}
		return out.Bytes(), nil
	default: // zstandard
		out, err := a.zstd.DecodeAll(data, nil)
		if err != nil {
			return nil, fmt.Errorf("%w: zstandard block: %v", errAvroCorrupt, err)
		}
		return out, nil
	}
}

// Decoding a row from the block in memory; every length is checked against
// what is left of the block.

func (a *avroReader) long() (int64, error) {
	u, n := binary.Uvarint(a.block[a.pos:])
	if n <= 0 {
		return 0, fmt.Errorf("%w: bad varint", errAvroCorrupt)
	}
	a.pos += n
	return int64(u>>1) ^ -int64(u&1), nil
}

func (a *avroReader) bytes() ([]byte, error) {
	n, err := a.long()
	if err != nil {
		return nil, err
	}
	if n < 0 || n > int64(len(a.block)-a.pos) {
		return nil, fmt.Errorf("%w: a length of %d with %d bytes left", errAvroCorrupt, n, len(a.block)-a.pos)
	}
	b := a.block[a.pos : a.pos+int(n) : a.pos+int(n)]
	a.pos += int(n)
	return b, nil
}

func (a *avroReader) ReadRow() (Row, error) {
	for a.count == 0 {
		if a.pos != len(a.block) {
			return Row{}, fmt.Errorf("%w: %d bytes after a block's last row", errAvroCorrupt, len(a.block)-a.pos)
		}
		if err := a.nextBlock(); err != nil {
			return Row{}, err
		}
	}
	a.count--
	var row Row
	var err error
	if row.Key, err = a.bytes(); err != nil {
		return Row{}, err
	}
	a.cells = a.cells[:0]
	for {
		n, err := a.long()
		if err != nil {
			return Row{}, err
		}
		if n == 0 {
			break
		}
		if n < 0 {
			if n == -n {
				return Row{}, fmt.Errorf("%w: array block count", errAvroCorrupt)
			}
			n = -n
			if _, err := a.long(); err != nil { // the block's byte size
				return Row{}, err
			}
		}
		// A cell takes at least 4 bytes (three lengths and a timestamp).
		if n > int64(len(a.block)-a.pos)/4 {
			return Row{}, fmt.Errorf("%w: %d cells in %d bytes", errAvroCorrupt, n, len(a.block)-a.pos)
		}
		for ; n > 0; n-- {
			var c Cell
			fam, err := a.bytes()
			if err != nil {
				return Row{}, err
			}
			c.Family = string(fam)
			if c.Qualifier, err = a.bytes(); err != nil {
				return Row{}, err
			}
			if c.Timestamp, err = a.long(); err != nil {
				return Row{}, err
			}
			if c.Value, err = a.bytes(); err != nil {
				return Row{}, err
			}
			a.cells = append(a.cells, c)
		}
	}
	row.Cells = a.cells
	return row, nil
}

// checkAvroSchema checks that a file's writer schema has BigtableRow's
// shape: the fields, their order and their types (the names of the records
// and any other properties do not change the encoding).
func checkAvroSchema(js []byte) error {
	var row avroSchemaNode
	if err := json.Unmarshal(js, &row); err != nil {
		return fmt.Errorf("%w: schema: %v", ErrAvroSchema, err)
	}
	if row.Type.name != "record" || len(row.Fields) != 2 ||
		row.Fields[0].Name != "key" || row.Fields[0].Type.name != "bytes" ||
		row.Fields[1].Name != "cells" || row.Fields[1].Type.name != "array" || row.Fields[1].Type.node.Items == nil {
		return fmt.Errorf("%w: want record {key: bytes, cells: array<BigtableCell>}", ErrAvroSchema)
	}
	cell := row.Fields[1].Type.node.Items
	want := []struct{ name, typ string }{{"family", "string"}, {"qualifier", "bytes"}, {"timestamp", "long"}, {"value", "bytes"}}
	if cell.name != "record" || len(cell.node.Fields) != len(want) {
		return fmt.Errorf("%w: want BigtableCell {family, qualifier, timestamp, value}", ErrAvroSchema)
	}
	for i, w := range want {
		if f := cell.node.Fields[i]; f.Name != w.name || f.Type.name != w.typ {
			return fmt.Errorf("%w: BigtableCell field %d is %s %s, want %s %s", ErrAvroSchema, i, f.Name, f.Type.name, w.name, w.typ)
		}
	}
	return nil
}

// avroSchemaNode is the part of an Avro schema checkAvroSchema reads.
type avroSchemaNode struct {
	Type   avroType `json:"type"`
	Fields []struct {
		Name string   `json:"name"`
		Type avroType `json:"type"`
	} `json:"fields"`
	Items *avroType `json:"items"`
}

// avroType is a type written either as its name ("bytes") or as an
// object ({"type": "record", ...}).
type avroType struct {
	name string
	node *avroSchemaNode
}

func (t *avroType) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &t.name)
	}
	t.node = new(avroSchemaNode)
	if err := json.Unmarshal(b, t.node); err != nil {
		return err
	}
	t.name = t.node.Type.name
	return nil
}
