package main

import (
	"context"
	"fmt"
	"math"

	"github.com/cockroachdb/pebble"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"

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

type opener func(dir string, durable bool, cacheBytes int64) (engine, error)

var engines = []struct {
	name string
	open opener
}{
	{"tabula", openTabula},
	{"pebble", openPebble},
	{"goleveldb", openLevelDB},
}

// ---- Tabula: one tablet with one snappy family keeping one version.

type tabulaEngine struct {
	t *tablet.Tablet
}

const benchFamily = "f"

func openTabula(dir string, durable bool, cacheBytes int64) (engine, error) {
	mode := wal.SyncNone
	if durable {
		mode = wal.SyncAlways
	}
	t, err := tablet.Open(tablet.Options{
		Dir: dir, Create: true,
		Families: []families.Family{{
			Name: benchFamily, MaxVersions: 1,
			Compression: families.CompressionSnappy, Bloom: families.BloomRow,
		}},
		SyncMode:     mode,
		Cache:        sstable.NewCache(cacheBytes),
		MemtableSize: *flagMemtable,
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
	it, err := e.t.NewRowIterator(context.Background(), tablet.ReadOptions{})
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

// ---- pebble

type pebbleEngine struct {
	db    *pebble.DB
	cache *pebble.Cache
}

func openPebble(dir string, _ bool, cacheBytes int64) (engine, error) {
	c := pebble.NewCache(cacheBytes)
	db, err := pebble.Open(dir, &pebble.Options{Cache: c, MemTableSize: uint64(*flagMemtable)})
	if err != nil {
		c.Unref()
		return nil, err
	}
	return &pebbleEngine{db: db, cache: c}, nil
}

func (e *pebbleEngine) Put(key, value []byte, durable bool) error {
	if durable {
		return e.db.Set(key, value, pebble.Sync)
	}
	return e.db.Set(key, value, pebble.NoSync)
}

func (e *pebbleEngine) Get(key []byte) ([]byte, error) {
	v, closer, err := e.db.Get(key)
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), v...)
	return out, closer.Close()
}

func (e *pebbleEngine) FlushAndCompact() error {
	if err := e.db.Flush(); err != nil {
		return err
	}
	return e.db.Compact([]byte{0}, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, true)
}

func (e *pebbleEngine) Scan() (int, int64, error) {
	it, err := e.db.NewIter(nil)
	if err != nil {
		return 0, 0, err
	}
	n, b := 0, int64(0)
	for ok := it.First(); ok; ok = it.Next() {
		n++
		b += int64(len(it.Key()) + len(it.Value()))
	}
	return n, b, it.Close()
}

func (e *pebbleEngine) Close() error {
	err := e.db.Close()
	e.cache.Unref()
	return err
}

// ---- goleveldb

type levelEngine struct{ db *leveldb.DB }

func openLevelDB(dir string, _ bool, cacheBytes int64) (engine, error) {
	db, err := leveldb.OpenFile(dir, &opt.Options{BlockCacheCapacity: int(min(cacheBytes, math.MaxInt32)), WriteBuffer: int(*flagMemtable)})
	if err != nil {
		return nil, err
	}
	return &levelEngine{db: db}, nil
}

func (e *levelEngine) Put(key, value []byte, durable bool) error {
	return e.db.Put(key, value, &opt.WriteOptions{Sync: durable})
}

func (e *levelEngine) Get(key []byte) ([]byte, error) { return e.db.Get(key, nil) }

func (e *levelEngine) FlushAndCompact() error { return e.db.CompactRange(util.Range{}) }

func (e *levelEngine) Scan() (int, int64, error) {
	it := e.db.NewIterator(nil, nil)
	defer it.Release()
	n, b := 0, int64(0)
	for it.Next() {
		n++
		b += int64(len(it.Key()) + len(it.Value()))
	}
	return n, b, it.Error()
}

func (e *levelEngine) Close() error { return e.db.Close() }
