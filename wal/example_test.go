package wal_test

import (
	"fmt"
	"log"
	"os"

	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/wal"
)

func Example() {
	dir, err := os.MkdirTemp("", "wal-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// First incarnation: write two records.
	l, err := wal.Open(wal.Options{Dir: dir})
	if err != nil {
		log.Fatal(err)
	}
	t, err := l.Write([]byte("row1 put"))
	if err != nil {
		log.Fatal(err)
	}
	if err := l.Wait(t); err != nil {
		log.Fatal(err)
	}
	if err := l.Append([]byte("row2 put")); err != nil {
		log.Fatal(err)
	}
	if err := l.Close(); err != nil {
		log.Fatal(err)
	}

	// Next incarnation: replay, then open for new writes.
	last, err := wal.Replay(vfs.Default, dir, 0, func(p []byte) error {
		fmt.Printf("replayed %q\n", p)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("last segment", last)
	// Output:
	// replayed "row1 put"
	// replayed "row2 put"
	// last segment 1
}
