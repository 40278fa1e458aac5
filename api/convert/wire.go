package convert

import (
	"errors"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/internal/unzeroed"
)

// The rows of a scan go over the wire in ReadRowsResponse messages, and
// building one as Row and Cell messages only for gRPC's codec to walk
// them again costs a tablet server more than encoding the rows itself;
// decoding one into messages costs a client more still (a message and a
// copy per cell, then the conversion to cells). RowBatch writes the
// encoding straight from a row's cells, and DecodeRows reads it straight
// into cells. The bytes are the ReadRowsResponse encoding (the field
// numbers of api/tabulapb/tabula.proto), so either side may be the old
// one: a message built by RowBatch decodes with proto.Unmarshal, and
// DecodeRows reads what proto.Marshal writes.
//
// Field numbers of the messages involved.
const (
	respRows = 1 // ReadRowsResponse.rows

	ingestTablet = 1 // IngestRowsRequest.tablet
	ingestRows   = 2 // IngestRowsRequest.rows

	rowKey       = 1 // Row.key
	rowCells     = 2 // Row.cells
	rowContinued = 3 // Row.continued

	cellFamily         = 1 // Cell.family
	cellQualifier      = 2 // Cell.qualifier
	cellTimestamp      = 3 // Cell.timestamp_micros
	cellValue          = 4 // Cell.value
	cellValueContinues = 5 // Cell.value_continues
	cellLabels         = 6 // Cell.labels
)

// AppendRow appends the encoding of one ReadRowsResponse.rows entry: the
// row's key and its cells (the cells' Row fields are not consulted), as
// CellsToProtoRow and proto.Marshal would make it.
func AppendRow(b []byte, row []byte, cells []cell.Cell) []byte {
	return appendRowField(b, respRows, row, cells)
}

// AppendIngestRow appends the encoding of one IngestRowsRequest.rows
// entry, as AppendRow does for a ReadRowsResponse's.
func AppendIngestRow(b []byte, row []byte, cells []cell.Cell) []byte {
	return appendRowField(b, ingestRows, row, cells)
}

// appendRowField appends a Row message as field num.
func appendRowField(b []byte, num protowire.Number, row []byte, cells []cell.Cell) []byte {
	n := 0
	if len(row) > 0 {
		n += protowire.SizeTag(rowKey) + protowire.SizeBytes(len(row))
	}
	for i := range cells {
		n += protowire.SizeTag(rowCells) + protowire.SizeBytes(cellSize(&cells[i]))
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(n))
	b = AppendBytesField(b, rowKey, row)
	for i := range cells {
		c := &cells[i]
		b = protowire.AppendTag(b, rowCells, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(cellSize(c)))
		if c.Family != "" {
			b = protowire.AppendTag(b, cellFamily, protowire.BytesType)
			b = protowire.AppendString(b, c.Family)
		}
		b = AppendBytesField(b, cellQualifier, c.Qualifier)
		if c.Timestamp != 0 {
			b = protowire.AppendTag(b, cellTimestamp, protowire.VarintType)
			b = protowire.AppendVarint(b, uint64(c.Timestamp))
		}
		b = AppendBytesField(b, cellValue, c.Value)
		for _, l := range c.Labels {
			b = protowire.AppendTag(b, cellLabels, protowire.BytesType)
			b = protowire.AppendString(b, l)
		}
	}
	return b
}

// appendBytesField appends a proto3 bytes field, left out when empty.
func AppendBytesField(b []byte, num protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

// cellSize is the size of a cell's Cell message as AppendRow encodes it.
func cellSize(c *cell.Cell) int {
	n := 0
	if c.Family != "" {
		n += protowire.SizeTag(cellFamily) + protowire.SizeBytes(len(c.Family))
	}
	if len(c.Qualifier) > 0 {
		n += protowire.SizeTag(cellQualifier) + protowire.SizeBytes(len(c.Qualifier))
	}
	if c.Timestamp != 0 {
		n += protowire.SizeTag(cellTimestamp) + protowire.SizeVarint(uint64(c.Timestamp))
	}
	if len(c.Value) > 0 {
		n += protowire.SizeTag(cellValue) + protowire.SizeBytes(len(c.Value))
	}
	for _, l := range c.Labels {
		n += protowire.SizeTag(cellLabels) + protowire.SizeBytes(len(l))
	}
	return n
}

// WireRow is a row DecodeRows read: its key and cells, each cell's Row
// set to the key, as CellsFromProtoRow makes them.
type WireRow struct {
	Key   []byte
	Cells []cell.Cell
}

// errWire is what DecodeRows returns for bytes that are no
// ReadRowsResponse.
var errWire = errors.New("convert: malformed ReadRowsResponse")

// DecodeRows decodes a ReadRowsResponse encoding into rows. Every byte
// slice of the rows is a copy, so nothing refers to b afterwards. It
// reports false, and no rows, when a row is a part of a larger one
// (continued, or a cell whose value continues): the caller then decodes
// the message as a ReadRowsResponse and joins the parts (RowJoiner). A
// malformed encoding is an error (where proto.Unmarshal fails); unknown
// fields are skipped as proto does.
func DecodeRows(b []byte) ([]WireRow, bool, error) {
	var d rowDecoder
	return d.decode(nil, b)
}

// rowDecoder decodes the messages of one scan (ScanResponse keeps one),
// with what it keeps from row to row: the last family name, the scratch
// of a row's cells, and the rowArena the rows' bytes and cells are cut
// from. Its zero value is ready.
type rowDecoder struct {
	families []string   // the last family names made, shared by the cells that repeat them
	cells    []wireCell // scratch: where the cells of the row being decoded lie
	arena    rowArena
	// borrow: the rows point into the message, and their cells are cut
	// from lent, which the next message reuses (ScanResponse.Borrow).
	borrow bool
	lent   []cell.Cell
}

// decode appends the rows of the encoding b to rows (DecodeRows).
func (d *rowDecoder) decode(rows []WireRow, b []byte) ([]WireRow, bool, error) {
	clear(d.lent[:cap(d.lent)]) // nothing keeps the last message's rows
	d.lent = d.lent[:0]
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return nil, false, errWire
		}
		b = b[n:]
		if num != respRows || typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return nil, false, errWire
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, false, errWire
		}
		b = b[n:]
		row, whole, err := d.decodeRow(v)
		if err != nil || !whole {
			return nil, whole, err
		}
		rows = append(rows, row)
	}
	return rows, true, nil
}

// rowArena hands out the memory of decoded rows: their bytes (key,
// qualifiers, values) and their cells, cut from chunks of arenaBytes and
// arenaCells instead of an allocation or two per row. A client scan
// decodes its rows at the rate the wire brings them, and allocating each
// row's own memory cost it about as much as the decoding itself
// (docs/BENCHMARKS.md "Scans over the wire"). A row larger than a
// quarter of a chunk gets its own allocation, so at most a quarter of a
// chunk is left unused. The price: a row kept after the others are
// dropped keeps its chunks (at most arenaBytes and arenaCells cells)
// reachable.
type rowArena struct {
	bytes []byte      // the unused rest of the current chunk of bytes
	cells []cell.Cell // the unused rest of the current chunk of cells
}

// The sizes of a rowArena's chunks.
const (
	arenaBytes = 32 << 10
	arenaCells = 64
)

// takeBytes returns an empty slice of capacity n (nil for 0), whose
// bytes are not cleared: the caller appends exactly n bytes.
func (a *rowArena) takeBytes(n int) []byte {
	if n == 0 {
		return nil
	}
	if n > len(a.bytes) {
		if n > arenaBytes/4 {
			return unzeroed.Bytes(n)[:0:n]
		}
		a.bytes = unzeroed.Bytes(arenaBytes)
	}
	b := a.bytes[:0:n]
	a.bytes = a.bytes[n:]
	return b
}

// takeCells returns n zero cells (empty, not nil, for 0: as
// CellsFromProtoRow).
func (a *rowArena) takeCells(n int) []cell.Cell {
	if n == 0 {
		return []cell.Cell{}
	}
	if n > len(a.cells) {
		if n > arenaCells/4 {
			return make([]cell.Cell, n)
		}
		a.cells = make([]cell.Cell, arenaCells)
	}
	c := a.cells[:n:n]
	a.cells = a.cells[n:]
	return c
}

// consumeTag is protowire.ConsumeTag, failing (n < 0) on a field number
// past the largest valid one as proto.Unmarshal does.
func consumeTag(b []byte) (protowire.Number, protowire.Type, int) {
	num, typ, n := protowire.ConsumeTag(b)
	if n >= 0 && num > protowire.MaxValidNumber {
		return 0, 0, -1
	}
	return num, typ, n
}

// wireCell is where a cell's fields lie in a Row message, before they
// are copied out.
type wireCell struct {
	family, qualifier, value []byte
	timestamp                int64
	labels                   [][]byte
}

// decodeRow decodes one Row message; whole is false for a row part. A
// cell of the same family as the one before shares its name instead of
// allocating its own.
func (d *rowDecoder) decodeRow(b []byte) (row WireRow, whole bool, err error) {
	var key []byte
	cells := d.cells[:0]
	defer func() {
		clear(cells) // it points into b, which the caller may reuse or pool
		d.cells = cells[:0]
	}()
	size := 0
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return WireRow{}, false, errWire
		}
		b = b[n:]
		switch {
		case num == rowKey && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return WireRow{}, false, errWire
			}
			key, b = v, b[n:]
		case num == rowCells && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return WireRow{}, false, errWire
			}
			b = b[n:]
			c, whole, err := decodeCell(v)
			if err != nil || !whole {
				return WireRow{}, whole, err
			}
			size += len(c.qualifier) + len(c.value)
			cells = append(cells, c)
		case num == rowContinued && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return WireRow{}, false, errWire
			}
			b = b[n:]
			if v != 0 {
				return WireRow{}, false, nil
			}
		default:
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return WireRow{}, false, errWire
			}
			b = b[n:]
		}
	}
	if d.borrow {
		return d.lendRow(key, cells), true, nil
	}
	// The key, qualifiers and values are copied, each in whole, into one
	// piece of the arena (so it need not be cleared first). An empty one
	// stays nil, as proto3 decodes it.
	mem := d.arena.takeBytes(len(key) + size)
	if len(key) > 0 {
		mem = append(mem, key...)
		row.Key = mem[:len(key):len(key)]
	}
	row.Cells = d.arena.takeCells(len(cells))
	for i := range cells {
		w, c := &cells[i], &row.Cells[i]
		c.Row, c.Timestamp = row.Key, w.timestamp
		if len(w.family) > 0 {
			c.Family = d.familyName(w.family)
		}
		if len(w.qualifier) > 0 {
			mem = append(mem, w.qualifier...)
			c.Qualifier = mem[len(mem)-len(w.qualifier) : len(mem) : len(mem)]
		}
		if len(w.value) > 0 {
			mem = append(mem, w.value...)
			c.Value = mem[len(mem)-len(w.value) : len(mem) : len(mem)]
		}
		for _, l := range w.labels {
			c.Labels = append(c.Labels, string(l))
		}
	}
	return row, true, nil
}

// familyName returns the family name b as a string, one made before if
// it is among the last few (a row's cells of several families would
// otherwise make a string at each change of family).
func (d *rowDecoder) familyName(b []byte) string {
	for _, f := range d.families {
		if f == string(b) {
			return f
		}
	}
	f := string(b)
	if len(d.families) < 8 {
		d.families = append(d.families, f)
	} else {
		copy(d.families, d.families[1:])
		d.families[len(d.families)-1] = f
	}
	return f
}

// lendRow makes the row of key and cells, pointing into the message
// where they lie (each slice capped, so that an append cannot overwrite
// what follows), its cells from d.lent.
func (d *rowDecoder) lendRow(key []byte, cells []wireCell) WireRow {
	row := WireRow{Key: nilIfNone(key)}
	if cap(d.lent)-len(d.lent) < len(cells) {
		// The rows already lent keep the old slice: start a larger one.
		d.lent = make([]cell.Cell, 0, max(2*cap(d.lent), len(cells), arenaCells))
	}
	n := len(d.lent)
	d.lent = d.lent[:n+len(cells)]
	row.Cells = d.lent[n : n+len(cells) : n+len(cells)]
	for i := range cells {
		w, c := &cells[i], &row.Cells[i]
		*c = cell.Cell{Row: row.Key, Timestamp: w.timestamp, Qualifier: nilIfNone(w.qualifier), Value: nilIfNone(w.value)}
		if len(w.family) > 0 {
			c.Family = d.familyName(w.family)
		}
		for _, l := range w.labels {
			c.Labels = append(c.Labels, string(l))
		}
	}
	return row
}

// nilIfNone returns b capped at its length, or nil when empty (as
// proto3 decodes an empty bytes field).
func nilIfNone(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b[:len(b):len(b)]
}

// decodeCell decodes one Cell message; whole is false when its value
// continues in the next part.
func decodeCell(b []byte) (c wireCell, whole bool, err error) {
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return wireCell{}, false, errWire
		}
		b = b[n:]
		switch {
		case typ == protowire.BytesType && (num == cellFamily || num == cellQualifier || num == cellValue || num == cellLabels):
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return wireCell{}, false, errWire
			}
			b = b[n:]
			switch num {
			case cellFamily:
				if !utf8.Valid(v) {
					return wireCell{}, false, errWire
				}
				c.family = v
			case cellQualifier:
				c.qualifier = v
			case cellValue:
				c.value = v
			default:
				if !utf8.Valid(v) {
					return wireCell{}, false, errWire
				}
				c.labels = append(c.labels, v)
			}
		case typ == protowire.VarintType && (num == cellTimestamp || num == cellValueContinues):
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return wireCell{}, false, errWire
			}
			b = b[n:]
			if num == cellTimestamp {
				c.timestamp = int64(v)
			} else if v != 0 {
				return wireCell{}, false, nil
			}
		default:
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return wireCell{}, false, errWire
			}
			b = b[n:]
		}
	}
	return c, true, nil
}
