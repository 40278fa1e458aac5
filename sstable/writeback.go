package sstable

import "github.com/tabuladb/tabula/vfs"

// Incremental write-out (pebble's and RocksDB's bytes_per_sync). Without
// it a table's pages stay dirty in the page cache until Close's fsync,
// which then writes the whole file: at 4M keys a major compaction's
// 253 MiB output, all of it waited for at the end, and until then
// counted among the machine's dirty pages, where the kernel throttles
// every writer (balance_dirty_pages) once they pass its threshold. The
// writer instead asks the OS to start writing each writebackEvery bytes
// as soon as they are handed to it (vfs.WritebackStarter), so that the
// fsync waits for the last ones only. It promises nothing more about
// durability: Close's fsync still does (docs/BENCHMARKS.md, "Compaction
// growth").
const writebackEvery = 512 << 10

// writebackPage is the granularity of a started range: ranges end on a
// page boundary, so that the page the next write still appends to is not
// one already under write-out.
const writebackPage = 4 << 10

// writeback is what a Writer's buffer writes to: the file, through a
// count of the bytes handed to it that starts their write-out every
// writebackEvery bytes.
type writeback struct {
	f vfs.Writable
	// written counts the bytes handed to f; started is the end of the
	// last range whose write-out was started.
	written, started int64
	// off is set once f could not start a write-out: it is not asked
	// again.
	off bool
}

func (w *writeback) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.written += int64(n)
	if err != nil || w.off {
		return n, err
	}
	if end := w.written &^ (writebackPage - 1); end-w.started >= writebackEvery {
		if !vfs.StartWriteback(w.f, w.started, end-w.started) {
			w.off = true
		}
		w.started = end
	}
	return n, nil
}
