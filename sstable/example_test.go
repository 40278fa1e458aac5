package sstable_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/sstable"
	"github.com/tabuladb/tabula/vfs"
)

// Example writes three cells of one family to a table and reads them back:
// a full scan, a seek to a row, and a bloom filter check.
func Example() {
	dir, err := os.MkdirTemp("", "sstable-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "000001.sst")

	f, err := vfs.Default.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	w := sstable.NewWriter(f, sstable.WriterOptions{
		Compression: families.CompressionSnappy,
		Bloom:       families.BloomRow,
	})
	for i, row := range []string{"apple", "banana", "cherry"} {
		k := cell.AppendKey(nil, cell.Key{Row: []byte(row), Qualifier: []byte("color"),
			Timestamp: 1700000000000000, Seq: uint64(i + 1), Kind: cell.KindSet})
		if err := w.Add(k, []byte(fmt.Sprintf("value-%d", i))); err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}

	r, err := sstable.Open(path, sstable.ReaderOptions{Cache: sstable.NewCache(8 << 20)})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	fmt.Println("cells:", r.Properties().NumCells)

	it := r.NewIter(nil, nil)
	for ok := it.First(); ok; ok = it.Next() {
		k, err := cell.DecodeKey(it.Key())
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s:%s = %s\n", k.Row, k.Qualifier, it.Value())
	}
	if it.SeekGE(cell.EncodeRow([]byte("b"))) {
		k, _ := cell.DecodeKey(it.Key())
		fmt.Println("first row >= b:", string(k.Row))
	}
	if err := it.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("may contain banana:", r.MayContainRow(cell.EncodeRow([]byte("banana"))))
	// Output:
	// cells: 3
	// apple:color = value-0
	// banana:color = value-1
	// cherry:color = value-2
	// first row >= b: banana
	// may contain banana: true
}
