package sstable

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

// FuzzBlockDecode feeds arbitrary bytes to the block decoder: it must
// reject or walk them without panicking, and keep keys within the block.
func FuzzBlockDecode(f *testing.F) {
	rng := rand.New(rand.NewSource(1))
	for _, interval := range []int{1, 2, 16} {
		bw := blockWriter{interval: interval}
		for _, e := range randomEntries(rng, 30, 20) {
			bw.add(e.key, e.value)
		}
		f.Add(bytes.Clone(bw.finish()), []byte("row-1"))
	}
	empty := blockWriter{interval: 16}
	f.Add(empty.finish(), []byte(nil))
	f.Add([]byte{}, []byte("x"))
	f.Add([]byte{0, 1, 1, 'a', 'b', 0, 0, 0, 0, 1, 0, 0, 0}, []byte("a"))
	f.Fuzz(func(t *testing.T, data, target []byte) {
		var it blockIter
		if it.init(data) != nil {
			return
		}
		for ok := it.first(); ok; ok = it.next() {
			if len(it.key)+len(it.val) > len(data) {
				t.Fatalf("entry of %d bytes in a block of %d", len(it.key)+len(it.val), len(data))
			}
		}
		if it.seekGE(target) && bytes.Compare(it.key, target) < 0 {
			t.Fatalf("seekGE(%q) landed on smaller key %q", target, it.key)
		}
	})
}

// FuzzFooter checks that the footer decoder never panics and that what it
// accepts re-encodes to the same bytes.
func FuzzFooter(f *testing.F) {
	good := footer{
		index:      blockHandle{offset: 100, length: 20},
		filter:     blockHandle{offset: 50, length: 30},
		properties: blockHandle{offset: 85, length: 10},
		version:    formatVersion,
	}.encode()
	f.Add(good)
	f.Add(make([]byte, footerLen))
	f.Add(good[:footerLen-1])
	f.Fuzz(func(t *testing.T, b []byte) {
		ft, err := decodeFooter(b)
		if err != nil {
			return
		}
		if !bytes.Equal(ft.encode(), b) {
			t.Fatalf("footer %+v re-encodes differently", ft)
		}
	})
}

// validTableSeeds writes small tables in every compression and bloom mode
// and returns their bytes.
func validTableSeeds(f *testing.F) [][]byte {
	rng := rand.New(rand.NewSource(2))
	dir := f.TempDir()
	var out [][]byte
	for i, c := range allCompressions {
		b := allBlooms[i]
		path, _ := writeTable(f, dir, WriterOptions{Compression: c, Bloom: b, BlockSize: 128, RestartInterval: 2}, randomEntries(rng, 12, 30))
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, data)
	}
	empty, _ := writeTable(f, dir, WriterOptions{}, nil)
	data, err := os.ReadFile(empty)
	if err != nil {
		f.Fatal(err)
	}
	return append(out, data)
}

// FuzzReader opens arbitrary bytes as a table and iterates it: Open may
// fail, but nothing may panic, and an opened table iterates and seeks
// without panicking.
func FuzzReader(f *testing.F) {
	for _, s := range validTableSeeds(f) {
		f.Add(s)
	}
	f.Add([]byte(magic))
	// One file per fuzzing process, rewritten for each input: the target
	// runs sequentially within a process.
	path := filepath.Join(f.TempDir(), "fuzz.sst")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Open(path, ReaderOptions{Cache: NewCache(1 << 20)})
		if err != nil {
			return
		}
		defer r.Close()
		it := r.NewIter(nil, nil)
		var keys [][]byte
		for ok := it.First(); ok; ok = it.Next() {
			keys = append(keys, bytes.Clone(it.Key()))
			_ = it.Value()
		}
		for _, k := range keys {
			it.SeekGE(k)
		}
		_ = it.Close()
		b := r.NewIter([]byte("a"), []byte("z"))
		for ok := b.First(); ok; ok = b.Next() {
		}
		_ = b.Close()
		r.MayContainRow([]byte("r\x00\x01"))
		r.MayContainColumn([]byte("r\x00\x01\x02q\x00\x01"))
		r.IndexEntries(nil, nil)
		r.ApproximateSize([]byte("a"), []byte("b"))
	})
}

// buildTable assembles a file from raw block contents, with correct
// checksums and footer, so that fuzzing reaches the decoders behind them.
func buildTable(data []byte, dataType byte, filter, props, index []byte) []byte {
	var out []byte
	put := func(b []byte, typ byte) blockHandle {
		h := blockHandle{offset: uint64(len(out)), length: uint64(len(b))}
		t := blockTrailer(b, typ)
		out = append(append(out, b...), t[:]...)
		return h
	}
	var ft footer
	ft.version = formatVersion
	put(data, dataType)
	if filter != nil {
		ft.filter = put(filter, blockTypeNone)
	}
	ft.properties = put(props, blockTypeNone)
	ft.index = put(index, blockTypeNone)
	return append(out, ft.encode()...)
}

// FuzzChecksummedBlocks fuzzes block contents under valid checksums: the
// index, properties and filter decoders and the decompressors see arbitrary
// bytes. Nothing may panic.
func FuzzChecksummedBlocks(f *testing.F) {
	rng := rand.New(rand.NewSource(3))
	dir := f.TempDir()
	for i, c := range allCompressions {
		path, _ := writeTable(f, dir, WriterOptions{Compression: c, Bloom: allBlooms[i]}, randomEntries(rng, 10, 30))
		r, err := Open(path, ReaderOptions{})
		if err != nil {
			f.Fatal(err)
		}
		file, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		ft, err := decodeFooter(file[len(file)-footerLen:])
		if err != nil {
			f.Fatal(err)
		}
		block := func(h blockHandle) []byte { return file[h.offset : h.offset+h.length] }
		dh := r.index.handle(0)
		var filter []byte
		if ft.filter != (blockHandle{}) {
			filter = block(ft.filter)
		}
		f.Add(block(dh), file[dh.offset+dh.length], filter, block(ft.properties), block(ft.index))
		_ = r.Close()
	}
	path := filepath.Join(f.TempDir(), "fuzz.sst")
	f.Fuzz(func(t *testing.T, data []byte, typ byte, filter, props, index []byte) {
		if err := os.WriteFile(path, buildTable(data, typ%4, filter, props, index), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Open(path, ReaderOptions{})
		if err != nil {
			return
		}
		defer r.Close()
		it := r.NewIter(nil, nil)
		for ok := it.First(); ok; ok = it.Next() {
		}
		it.SeekGE([]byte("row"))
		_ = it.Close()
		r.MayContainRow([]byte("row-1\x00\x01"))
		r.MayContainColumn([]byte("row-1\x00\x01\x02q1\x00\x01"))
	})
}
