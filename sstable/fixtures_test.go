package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/vfs"
)

// Frozen fixtures: SSTables written once, by the writer of each format
// version, and committed under testdata/v1/, testdata/v2/ and so on (see
// fixtureVersions). They stand for files already on disks,
// so every later release must read them back exactly, whatever the writer,
// the compression libraries or the bloom filter library become. Their
// contents are fixtureEntries; what depends on the bytes (block counts and
// types, sizes, the filter's false positives) is recorded in sstFixtures.
//
// A failing fixture test means that files written by an older Tabula no
// longer read (or, for the bloom checks, that point reads would skip files
// holding the row): fix the code, never the fixture. A new format version
// gets fixtures of its own beside these (testdata/v2/), and these stay.
//
// To write a fixture that does not exist yet (after adding a row to
// sstFixtures with zero recorded values):
//
//	go test ./sstable -run TestFrozenFixtures -update-fixtures
//
// It writes only missing files of the current format version, never
// overwrites one, and prints the values to record. Replacing a fixture means deleting it first, and is only right
// if no release ever wrote files like it.
var updateFixtures = flag.Bool("update-fixtures", false, "write missing frozen fixtures under testdata/ and print the values to record")

// fixtureWriterOptions are the writer settings of the fixtures besides
// compression and filter: small blocks, so that each file has several.
var fixtureWriterOptions = WriterOptions{BlockSize: 2 << 10, RestartInterval: 16, BloomFalsePositive: 0.01}

type sstFixture struct {
	file        string
	compression families.Compression
	bloom       families.Bloom
	// rawBlocks and compressedBlocks count the data blocks stored as they
	// are and compressed (a block that does not shrink by 1/8 is stored as
	// it is, whatever the file's compression).
	rawBlocks, compressedBlocks int
	// dataSize and fileSize are the sizes of the data blocks (with their
	// trailers) and of the whole file.
	dataSize, fileSize uint64
	// rowFalsePositives and columnFalsePositives are the indices of the
	// probes of fixtureAbsentRows and fixtureAbsentColumns that the filter
	// lets through: they are fixed by the filter's bits and its hashing.
	// With no filter every probe passes; with a row filter every column
	// probe passes (its row is present).
	rowFalsePositives, columnFalsePositives []int
}

// sstFixtures cover each compression and each filter kind; the filter
// block is never compressed, so the other pairs would add nothing.
var sstFixtures = []sstFixture{
	{"none-nofilter.sst", families.CompressionNone, families.BloomNone, 10, 0, 20631, 21149, nil, nil},
	{"none-row.sst", families.CompressionNone, families.BloomRow, 10, 0, 20631, 21238, []int{126, 170, 211, 326, 358}, nil},
	{"none-rowcolumn.sst", families.CompressionNone, families.BloomRowColumn, 10, 0, 20631, 21454, []int{122, 233, 340, 428, 480}, []int{207, 437, 489}},
	{"snappy-row.sst", families.CompressionSnappy, families.BloomRow, 3, 7, 14392, 14996, []int{126, 170, 211, 326, 358}, nil},
	{"zstd-rowcolumn.sst", families.CompressionZstd, families.BloomRowColumn, 3, 7, 13916, 14736, []int{122, 233, 340, 428, 480}, []int{207, 437, 489}},
}

// sstFixturesV2 are the same files written by the format version 2 writer:
// only the filter's hashing differs, so only the false positives do.
var sstFixturesV2 = []sstFixture{
	{"none-nofilter.sst", families.CompressionNone, families.BloomNone, 10, 0, 20631, 21149, nil, nil},
	{"none-row.sst", families.CompressionNone, families.BloomRow, 10, 0, 20631, 21238, []int{51, 343}, nil},
	{"none-rowcolumn.sst", families.CompressionNone, families.BloomRowColumn, 10, 0, 20631, 21454, []int{134, 368, 449, 459, 496}, []int{40, 121, 223}},
	{"snappy-row.sst", families.CompressionSnappy, families.BloomRow, 3, 7, 14392, 14996, []int{51, 343}, nil},
	{"zstd-rowcolumn.sst", families.CompressionZstd, families.BloomRowColumn, 3, 7, 13916, 14736, []int{134, 368, 449, 459, 496}, []int{40, 121, 223}},
}

// fixtureVersions are the fixtures of each format version, by folder under
// testdata/. Only the current version's (formatVersion) can be written.
var fixtureVersions = []struct {
	dir      string
	version  uint32
	fixtures []sstFixture
}{
	{"v1", 1, sstFixtures},
	{"v2", 2, sstFixturesV2},
}

// Shape of the fixtures' contents.
const (
	fixtureRows       = 60
	fixtureTimestamp  = 1_700_000_000_000_000 // µs
	fixtureSeq        = 5000
	fixtureAbsentRowN = 500
	fixtureAbsentColN = 500
)

// fixtureQualifiers are the columns of every row: an empty qualifier, a
// plain one and one with a 0x00 byte (escaped in keys).
var fixtureQualifiers = [][]byte{{}, []byte("col"), []byte("q\x00\xff")}

// fixtureRow returns row r's key; every ninth row has 0x00 bytes.
func fixtureRow(r int) []byte {
	if r%9 == 4 {
		return fmt.Appendf(nil, "row-%03d\x00\x00bin", r)
	}
	return fmt.Appendf(nil, "row-%03d", r)
}

// fixtureNoise returns n bytes of a fixed pseudo-random sequence (SplitMix64).
func fixtureNoise(seed uint64, n int) []byte {
	out := make([]byte, 0, n+8)
	for len(out) < n {
		seed += 0x9e3779b97f4a7c15
		z := seed
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		out = binary.LittleEndian.AppendUint64(out, z)
	}
	return out[:n]
}

// fixtureEntries returns the entries of every fixture, in key order: per
// row maybe a family tombstone, then per column maybe a column tombstone
// and one to three versions. Values are empty, short, compressible text or
// incompressible noise; rows 30 to 37 hold only noise, so that the
// compressed files also have blocks stored as they are.
func fixtureEntries() []kv {
	var out []kv
	add := func(k cell.Key, v []byte) {
		out = append(out, kv{key: cell.AppendKey(nil, k), value: v, k: k})
	}
	for r := range fixtureRows {
		row := fixtureRow(r)
		seq := uint64(fixtureSeq + 10*r)
		if r%7 == 2 {
			add(cell.Key{Row: row, Seq: seq + 9, Kind: cell.KindDeleteFamily}, nil)
		}
		for c, q := range fixtureQualifiers {
			if (r+c)%5 == 1 {
				start := int64(fixtureTimestamp + r*1000)
				add(cell.Key{Row: row, Qualifier: q, Seq: seq + 8, Kind: cell.KindDeleteColumn},
					cell.AppendDeleteRange(nil, start, start+int64(c)*500))
			}
			for v := range 1 + (r+c)%3 {
				k := cell.Key{Row: row, Qualifier: q, Timestamp: int64(fixtureTimestamp + r*1000 - v*100), Seq: seq + uint64(c*3+v)%8, Kind: cell.KindSet}
				var val []byte
				switch {
				case r >= 30 && r < 38:
					val = fixtureNoise(uint64(r<<16|c<<8|v), 120)
				case (r+c+v)%4 == 0:
					val = nil
				case (r+c+v)%4 == 1:
					val = fmt.Appendf(nil, "v%d", v)
				case (r+c+v)%4 == 2:
					val = bytes.Repeat(fmt.Appendf(nil, "value of %s/%d@%d; ", row, c, v), 1+r%3)
				default:
					val = fixtureNoise(uint64(r<<16|c<<8|v), 16+r%24)
				}
				add(k, val)
			}
		}
	}
	sortEntries(out)
	return out
}

// fixtureAbsentRows are rows that no fixture holds.
func fixtureAbsentRows() [][]byte {
	out := make([][]byte, fixtureAbsentRowN)
	for i := range out {
		if i%2 == 0 {
			out[i] = fixtureRow(fixtureRows + i)
		} else {
			out[i] = fmt.Appendf(nil, "absent-%d", i)
		}
	}
	return out
}

// fixtureAbsentColumns are columns that no fixture holds, of present rows.
func fixtureAbsentColumns() [][2][]byte {
	out := make([][2][]byte, fixtureAbsentColN)
	for i := range out {
		out[i] = [2][]byte{fixtureRow(i % fixtureRows), fmt.Appendf(nil, "absent-%d", i)}
	}
	return out
}

func TestFrozenFixtures(t *testing.T) {
	entries := fixtureEntries()
	if *updateFixtures {
		writeFixtures(t, entries)
		return
	}
	for _, fv := range fixtureVersions {
		for _, fx := range fv.fixtures {
			t.Run(fv.dir+"/"+fx.file, func(t *testing.T) {
				path := filepath.Join("testdata", fv.dir, fx.file)
				r, err := Open(path, ReaderOptions{Cache: NewCache(1 << 20)})
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				defer r.Close()
				checkFixtureVersion(t, r, fv.version)
				checkFixtureContents(t, r, entries)
				checkFixtureProperties(t, r, fx, entries)
				checkFixtureBlocks(t, r, fx)
				checkFixtureLookups(t, r, entries)
				checkFixtureFilter(t, r, fx)
			})
		}
	}
}

// checkFixtureVersion checks the format version in the file's footer, so
// that each folder is known to hold what its version's reader must read.
func checkFixtureVersion(t *testing.T, r *Reader, version uint32) {
	t.Helper()
	b := make([]byte, footerLen)
	if _, err := r.f.ReadAt(b, r.f.Size()-footerLen); err != nil {
		t.Fatal(err)
	}
	ft, err := decodeFooter(b)
	if err != nil {
		t.Fatal(err)
	}
	if ft.version != version {
		t.Errorf("format version %d, want %d", ft.version, version)
	}
}

// checkFixtureContents scans the file and compares every decoded key and
// value with the expected entries.
func checkFixtureContents(t *testing.T, r *Reader, entries []kv) {
	t.Helper()
	it := r.NewIter(nil, nil)
	defer it.Close()
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if i >= len(entries) {
			t.Fatalf("more than the %d entries written", len(entries))
		}
		k, err := cell.DecodeKey(it.Key())
		if err != nil {
			t.Fatalf("entry %d: key %q does not decode: %v", i, it.Key(), err)
		}
		w := entries[i].k
		if !bytes.Equal(k.Row, w.Row) || !bytes.Equal(k.Qualifier, w.Qualifier) || k.Timestamp != w.Timestamp || k.Seq != w.Seq || k.Kind != w.Kind {
			t.Fatalf("entry %d: key %+v, want %+v", i, k, w)
		}
		if !bytes.Equal(it.Value(), entries[i].value) {
			t.Fatalf("entry %d (%+v): value %q, want %q", i, k, it.Value(), entries[i].value)
		}
		i++
	}
	if err := it.Err(); err != nil {
		t.Fatalf("scan: %v", err)
	}
	if i != len(entries) {
		t.Fatalf("scan read %d entries, want %d", i, len(entries))
	}
}

func checkFixtureProperties(t *testing.T, r *Reader, fx sstFixture, entries []kv) {
	t.Helper()
	want := expectedProperties(entries, WriterOptions{Compression: fx.compression, Bloom: fx.bloom})
	checkProperties(t, r.Properties(), want)
	p := r.Properties()
	if int(p.NumDataBlocks) != fx.rawBlocks+fx.compressedBlocks || p.DataSize != fx.dataSize || p.FileSize != fx.fileSize {
		t.Errorf("%d blocks, data size %d, file size %d; recorded %d blocks, %d, %d",
			p.NumDataBlocks, p.DataSize, p.FileSize, fx.rawBlocks+fx.compressedBlocks, fx.dataSize, fx.fileSize)
	}
}

// checkFixtureBlocks checks the types in the data blocks' trailers, so that
// the decompressor is known to have run on the recorded number of blocks.
func checkFixtureBlocks(t *testing.T, r *Reader, fx sstFixture) {
	t.Helper()
	raw, compressed := fixtureBlockTypes(t, r, fx.compression)
	if raw != fx.rawBlocks || compressed != fx.compressedBlocks {
		t.Errorf("%d blocks stored as they are and %d compressed, recorded %d and %d", raw, compressed, fx.rawBlocks, fx.compressedBlocks)
	}
}

func fixtureBlockTypes(t *testing.T, r *Reader, c families.Compression) (raw, compressed int) {
	t.Helper()
	for i := range r.index.len() {
		h := r.index.handle(i)
		var typ [1]byte
		if _, err := r.f.ReadAt(typ[:], int64(h.offset+h.length)); err != nil {
			t.Fatal(err)
		}
		switch typ[0] {
		case blockTypeNone:
			raw++
		case byte(c):
			compressed++
		default:
			t.Errorf("data block %d has type %d in a file compressed with %v", i, typ[0], c)
		}
	}
	return raw, compressed
}

// checkFixtureLookups does what a point read does for every row and column
// of the file: asks the filter, then seeks to the row or column and expects
// its first entry there.
func checkFixtureLookups(t *testing.T, r *Reader, entries []kv) {
	t.Helper()
	it := r.NewIter(nil, nil)
	defer it.Close()
	var lastRow, lastCol []byte
	for i, e := range entries {
		if row := cell.EncodeRow(e.k.Row); !bytes.Equal(row, lastRow) {
			lastRow, lastCol = row, nil
			if !r.MayContainRow(row) {
				t.Fatalf("the filter rules out row %q, which the file holds", e.k.Row)
			}
			if !it.SeekGE(row) || !bytes.Equal(it.Key(), e.key) {
				t.Fatalf("SeekGE(row %q) = %q (err %v), want entry %d %q", e.k.Row, it.Key(), it.Err(), i, e.key)
			}
		}
		if e.k.Kind == cell.KindDeleteFamily {
			continue
		}
		if col := cell.EncodeColumn(e.k.Row, e.k.Qualifier); !bytes.Equal(col, lastCol) {
			lastCol = col
			if !r.MayContainColumn(col) {
				t.Fatalf("the filter rules out column %q/%q, which the file holds", e.k.Row, e.k.Qualifier)
			}
			if !it.SeekGE(col) || !bytes.Equal(it.Key(), e.key) {
				t.Fatalf("SeekGE(column %q/%q) = %q (err %v), want entry %d %q", e.k.Row, e.k.Qualifier, it.Key(), it.Err(), i, e.key)
			}
		}
	}
}

// checkFixtureFilter checks the filter's answers for absent rows and columns
// against the recorded false positives.
func checkFixtureFilter(t *testing.T, r *Reader, fx sstFixture) {
	t.Helper()
	rowFPs, colFPs := fixtureFalsePositives(r)
	wantRows, wantCols := fx.rowFalsePositives, fx.columnFalsePositives
	all := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	switch fx.bloom {
	case families.BloomNone:
		wantRows, wantCols = all(fixtureAbsentRowN), all(fixtureAbsentColN)
	case families.BloomRow:
		wantCols = all(fixtureAbsentColN)
	}
	if !slices.Equal(rowFPs, wantRows) {
		t.Errorf("absent rows let through: %v, recorded %v", rowFPs, wantRows)
	}
	if !slices.Equal(colFPs, wantCols) {
		t.Errorf("absent columns let through: %v, recorded %v", colFPs, wantCols)
	}
}

func fixtureFalsePositives(r *Reader) (rows, cols []int) {
	rows, cols = []int{}, []int{}
	for i, row := range fixtureAbsentRows() {
		if r.MayContainRow(cell.EncodeRow(row)) {
			rows = append(rows, i)
		}
	}
	for i, c := range fixtureAbsentColumns() {
		if r.MayContainColumn(cell.EncodeColumn(c[0], c[1])) {
			cols = append(cols, i)
		}
	}
	return rows, cols
}

// writeFixtures writes the fixtures that do not exist yet and logs what to
// record for every fixture.
func writeFixtures(t *testing.T, entries []kv) {
	fv := fixtureVersions[len(fixtureVersions)-1]
	if fv.version != formatVersion {
		t.Fatalf("no fixtures for format version %d in fixtureVersions", formatVersion)
	}
	dir := filepath.Join("testdata", fv.dir)
	if err := vfs.Default.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	var rec strings.Builder
	for _, fx := range fv.fixtures {
		path := filepath.Join(dir, fx.file)
		if _, err := vfs.Default.Stat(path); errors.Is(err, fs.ErrNotExist) {
			f, err := vfs.Default.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			opts := fixtureWriterOptions
			opts.Compression, opts.Bloom = fx.compression, fx.bloom
			w := NewWriter(f, opts)
			for _, e := range entries {
				if err := w.Add(e.key, e.value); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			t.Logf("wrote %s", path)
		}
		r, err := Open(path, ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		raw, compressed := fixtureBlockTypes(t, r, fx.compression)
		rows, cols := fixtureFalsePositives(r)
		switch fx.bloom { // what every probe passing is written as
		case families.BloomNone:
			rows, cols = nil, nil
		case families.BloomRow:
			cols = nil
		}
		p := r.Properties()
		fmt.Fprintf(&rec, "\t{%q, families.%s, families.%s, %d, %d, %d, %d, %#v, %#v},\n",
			fx.file, [...]string{"CompressionNone", "CompressionSnappy", "CompressionZstd"}[fx.compression],
			[...]string{"BloomNone", "BloomRow", "BloomRowColumn"}[fx.bloom],
			raw, compressed, p.DataSize, p.FileSize, rows, cols)
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("record in sstFixtures:\n%s", rec.String())
}
