package main

import (
	"context"
	"fmt"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/sstable"
	"github.com/tabuladb/tabula/tabletserver/tablet"
	"github.com/tabuladb/tabula/wal"
)

// engine is what every workload drives: the same calls on Tabula's tablet
// engine and on the peers.
type engine interface {
	// Put writes one key; durable says whether it must be synced before
	// returning.
	Put(key, value []byte, durable bool) error
	Get(key []byte) ([]byte, error)
	// FlushAndCompact leaves the data in one fully compacted file set.
	FlushAndCompact() error
	// Scan visits every key in order and returns the bytes seen.
	Scan() (n int, bytes int64, err error)
	Close() error
}

// config is the one configuration every engine gets (printConfig says how
// each engine's options express it).
type config struct {
	// cache is the block cache in bytes.
	cache int64
	// memtable is the memtable (write buffer) size in bytes.
	memtable int64
	// blockSize is the target data block size in bytes.
	blockSize int
	// bloomBits is the bloom filter's bits per key (peers); Tabula's
	// filter is sized by false-positive rate, the sstable package's 1 %,
	// which is what 10 bits per key give.
	bloomBits int
	// tabulaSync is Tabula's commit log mode on the non-durable rows; the
	// durable rows always use wal.SyncAlways.
	tabulaSync wal.SyncMode
	// pebble2Format is pebble v2's format major version: "newest" or
	// "default" (what pebble picks when the option is left zero).
	pebble2Format string
}

type opener func(dir string, durable bool, c config) (engine, error)

// engines lists every engine in the order a run starts from.
var engines = []struct {
	name string
	open opener
}{
	{"tabula", openTabula},
	{"pebble2", openPebble2},
	{"pebble1", openPebble1},
	{"goleveldb", openLevelDB},
}

// engineAliases are other names -engines accepts.
var engineAliases = map[string]string{"pebble": "pebble1"}

// peerLabel is how the report names an engine.
var peerLabel = map[string]string{
	"tabula": "Tabula", "pebble2": "pebble v2", "pebble1": "pebble v1", "goleveldb": "goleveldb",
}

func openerFor(name string) (opener, error) {
	for _, e := range engines {
		if e.name == name {
			return e.open, nil
		}
	}
	return nil, fmt.Errorf("enginebench: unknown engine %q", name)
}

// ---- Tabula: one tablet with one snappy family keeping one version.

type tabulaEngine struct {
	t *tablet.Tablet
}

const benchFamily = "f"

func openTabula(dir string, durable bool, c config) (engine, error) {
	mode := c.tabulaSync
	if durable {
		mode = wal.SyncAlways
	}
	t, err := tablet.Open(tablet.Options{
		Dir: dir, Create: true,
		Families: []families.Family{{
			Name: benchFamily, MaxVersions: 1,
			Compression: families.CompressionSnappy, Bloom: families.BloomRow,
			BlockSize: c.blockSize,
		}},
		SyncMode:     mode,
		Cache:        sstable.NewCache(c.cache),
		MemtableSize: c.memtable,
	})
	if err != nil {
		return nil, err
	}
	return &tabulaEngine{t: t}, nil
}

func (e *tabulaEngine) Put(key, value []byte, _ bool) error {
	return e.t.Apply(context.Background(), key, []cell.Mutation{{
		Kind: cell.SetCell, Family: benchFamily, Timestamp: 1, Value: value,
	}})
}

func (e *tabulaEngine) Get(key []byte) ([]byte, error) {
	cells, err := e.t.ReadRow(context.Background(), key, nil)
	if err != nil {
		return nil, err
	}
	if len(cells) == 0 {
		return nil, fmt.Errorf("enginebench: key %x not found", key)
	}
	return cells[0].Value, nil
}

func (e *tabulaEngine) FlushAndCompact() error {
	ctx := context.Background()
	if err := e.t.Flush(ctx); err != nil {
		return err
	}
	return e.t.Compact(ctx, true)
}

func (e *tabulaEngine) Scan() (int, int64, error) {
	// The tablet server's scans reuse cells too (each row is copied into
	// its message before the next), and pebble's iterators hand out
	// borrowed slices.
	it, err := e.t.NewRowIterator(context.Background(), tablet.ReadOptions{ReuseCells: true})
	if err != nil {
		return 0, 0, err
	}
	n, b := 0, int64(0)
	for it.Next() {
		n++
		b += int64(len(it.Row()))
		for _, c := range it.Cells() {
			b += int64(len(c.Value))
		}
	}
	if err := it.Err(); err != nil {
		it.Close()
		return n, b, err
	}
	return n, b, it.Close()
}

func (e *tabulaEngine) Close() error { return e.t.Close() }
