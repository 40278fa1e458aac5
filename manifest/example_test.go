package manifest_test

import (
	"fmt"
	"log"
	"os"

	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/vfs"
)

func Example() {
	dir, err := os.MkdirTemp("", "manifest-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	st, found, err := manifest.Load(vfs.Default, dir)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("found:", found)

	// After a flush: the new file goes first in its family, and the
	// commit log may be replayed from segment 4 on.
	st.Files = append([]manifest.FileRef{{Family: "cf1", Path: "cf1/000001.sst", FileNum: 1, MinSeq: 1, MaxSeq: 42}}, st.Files...)
	st.ReplayPoint, st.LastSeq, st.NextFileNum = 4, 42, 2
	if err := manifest.Save(vfs.Default, dir, st); err != nil {
		log.Fatal(err)
	}

	st, found, err = manifest.Load(vfs.Default, dir)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("found:", found, "files:", len(st.Files), "replay point:", st.ReplayPoint, "last seq:", st.LastSeq)
	// Output:
	// found: false
	// found: true files: 1 replay point: 4 last seq: 42
}
