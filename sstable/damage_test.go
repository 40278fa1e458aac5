package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tabuladb/tabula/families"
)

// readAll opens path and scans it, returning what it read before the first
// error, and that error.
func readAll(path string) ([]kv, error) {
	r, err := Open(path, ReaderOptions{})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	it := r.NewIter(nil, nil)
	defer it.Close()
	var out []kv
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, kv{key: bytes.Clone(it.Key()), value: bytes.Clone(it.Value())})
	}
	return out, it.Err()
}

// checkDamageReported requires an ErrCorrupt error that names the file and a
// block, and that everything read before it was written.
func checkDamageReported(t *testing.T, what, path string, got []kv, err error, written []kv) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: damage went unnoticed", what)
	}
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("%s: error %v does not wrap ErrCorrupt", what, err)
	}
	if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, " block at offset ") {
		t.Fatalf("%s: error %q does not name the file and the block", what, msg)
	}
	if len(got) > len(written) {
		t.Fatalf("%s: read %d entries, %d were written", what, len(got), len(written))
	}
	sameEntries(t, what, got, written[:len(got)])
}

// TestDamageIsReported flips a bit in every byte of small files (covering
// data, filter, properties and index blocks, trailers and the footer) and
// truncates them at every length.
func TestDamageIsReported(t *testing.T) {
	rng := testRand(t)
	dir := t.TempDir()
	for _, c := range allCompressions {
		entries := randomEntries(rng, 40, 40)
		orig, _ := writeTable(t, dir, WriterOptions{Compression: c, Bloom: families.BloomRowColumn, BlockSize: 256}, entries)
		good, err := os.ReadFile(orig)
		if err != nil {
			t.Fatal(err)
		}
		got, err := readAll(orig)
		if err != nil {
			t.Fatal(err)
		}
		sameEntries(t, "undamaged", got, entries)

		// Every byte of the uncompressed file; for the others every 5th
		// byte and every byte of the metadata blocks and footer.
		stride := 1
		if c != families.CompressionNone {
			stride = 5
		}
		metaStart := int(binary.LittleEndian.Uint64(good[len(good)-footerLen+16:])) // the filter block follows the data
		// One file, damaged and repaired in place: a byte write per case.
		path := filepath.Join(dir, "damaged-"+c.String()+".sst")
		if err := os.WriteFile(path, good, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range good {
			if i%stride != 0 && i < metaStart-100 {
				continue
			}
			writeByteAt(t, f, good[i]^(1<<(i%8)), i)
			got, err := readAll(path)
			checkDamageReported(t, c.String()+": bit flip at byte "+itoa(i), path, got, err, entries)
			writeByteAt(t, f, good[i], i)
		}
		for n := len(good) - 1; n >= 0; n-- {
			if n%stride != 0 && n < metaStart-100 {
				continue
			}
			if err := f.Truncate(int64(n)); err != nil {
				t.Fatal(err)
			}
			got, err := readAll(path)
			checkDamageReported(t, c.String()+": truncated to "+itoa(n), path, got, err, entries)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("%v: %d bytes damaged every way", c, len(good))
	}
}

// TestBlockDamageNamesTheBlock damages one data block and checks that the
// error names that block while the blocks before it still read back.
func TestBlockDamageNamesTheBlock(t *testing.T) {
	rng := testRand(t)
	dir := t.TempDir()
	entries := randomEntries(rng, 300, 50)
	path, _ := writeTable(t, dir, WriterOptions{BlockSize: 512}, entries)
	r := openTable(t, path, ReaderOptions{})
	idx := &r.index
	victim := idx.len() / 2
	off := idx.handle(victim).offset
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[off+1] ^= 0x40
	bad := filepath.Join(dir, "bad.sst")
	if err := os.WriteFile(bad, b, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readAll(bad)
	checkDamageReported(t, "damaged data block", bad, got, err, entries)
	if want := "data block at offset " + itoa(int(off)) + ":"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
	// Every entry of the blocks before the victim was read.
	n := 0
	for _, e := range entries {
		if bytes.Compare(e.key, idx.lastKey(victim-1)) <= 0 {
			n++
		}
	}
	if len(got) != n {
		t.Fatalf("read %d entries before the damaged block, want %d", len(got), n)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func writeByteAt(t *testing.T, f *os.File, b byte, off int) {
	t.Helper()
	if _, err := f.WriteAt([]byte{b}, int64(off)); err != nil {
		t.Fatal(err)
	}
}
