package sstable

import (
	"errors"
	"io/fs"
	"math/rand"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/vfs"
)

const benchEntries = 100_000

func benchKeys() []kv {
	out := make([]kv, benchEntries)
	value := make([]byte, 100)
	rand.New(rand.NewSource(1)).Read(value[:50]) // half random, half zeros
	for i := range out {
		k := cell.Key{Row: []byte("user" + strconv.Itoa(1_000_000+i/4)), Qualifier: []byte("q" + strconv.Itoa(i%4)),
			Timestamp: 1_700_000_000_000_000, Seq: uint64(i), Kind: cell.KindSet}
		out[i] = kv{key: cell.AppendKey(nil, k), value: value, k: k}
	}
	return out
}

func writeBench(b *testing.B, dir string, c families.Compression, entries []kv) string {
	path := filepath.Join(dir, "bench-"+c.String()+".sst")
	// A benchmark function runs several times (b.N rises): write anew.
	if err := vfs.Default.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		b.Fatal(err)
	}
	f, err := vfs.Default.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := NewWriter(f, WriterOptions{Compression: c, Bloom: families.BloomRow})
	for _, e := range entries {
		if err := w.Add(e.key, e.value); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkWrite100k writes 100k entries of 100-byte values.
func BenchmarkWrite100k(b *testing.B) {
	entries := benchKeys()
	dir := b.TempDir()
	for _, c := range allCompressions {
		b.Run(c.String(), func(b *testing.B) {
			b.SetBytes(int64(benchEntries * (len(entries[0].key) + 100)))
			for i := 0; i < b.N; i++ {
				writeBench(b, dir, c, entries)
			}
		})
	}
}

// BenchmarkIterate scans 100k entries sequentially.
func BenchmarkIterate(b *testing.B) {
	entries := benchKeys()
	dir := b.TempDir()
	for _, c := range allCompressions {
		b.Run(c.String(), func(b *testing.B) {
			r, err := Open(writeBench(b, dir, c, entries), ReaderOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				it := r.NewIter(nil, nil)
				n := 0
				for ok := it.First(); ok; ok = it.Next() {
					n++
				}
				if err := it.Close(); err != nil || n != benchEntries {
					b.Fatalf("scanned %d entries: %v", n, err)
				}
			}
		})
	}
}

// BenchmarkSeekGE seeks to random keys through a warm block cache.
func BenchmarkSeekGE(b *testing.B) {
	entries := benchKeys()
	dir := b.TempDir()
	for _, c := range allCompressions {
		b.Run(c.String(), func(b *testing.B) {
			r, err := Open(writeBench(b, dir, c, entries), ReaderOptions{Cache: NewCache(64 << 20)})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			it := r.NewIter(nil, nil)
			defer it.Close()
			rng := rand.New(rand.NewSource(3))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if !it.SeekGE(entries[rng.Intn(benchEntries)].key) {
					b.Fatal(it.Err())
				}
			}
		})
	}
}
