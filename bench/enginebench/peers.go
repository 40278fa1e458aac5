package main

import (
	"context"
	"io"
	"math"

	"github.com/cockroachdb/pebble"
	pebblebloom "github.com/cockroachdb/pebble/bloom"
	pebble2 "github.com/cockroachdb/pebble/v2"
	pebble2bloom "github.com/cockroachdb/pebble/v2/bloom"
	pebble2sstable "github.com/cockroachdb/pebble/v2/sstable"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// compactAll is an upper bound of every key the workloads write (16-byte
// keys starting "tabulakey").
var compactAll = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// pebbleIter is what both pebbles' iterators do.
type pebbleIter interface {
	First() bool
	Next() bool
	Key() []byte
	Value() []byte
	Close() error
}

// scanIter visits every key of it and closes it.
func scanIter(it pebbleIter) (int, int64, error) {
	n, b := 0, int64(0)
	for ok := it.First(); ok; ok = it.Next() {
		n++
		b += int64(len(it.Key()) + len(it.Value()))
	}
	return n, b, it.Close()
}

// copyValue copies a pebble Get's value out of the memory closer releases.
func copyValue(v []byte, closer io.Closer, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), v...)
	return out, closer.Close()
}

// ---- pebble v2 (github.com/cockroachdb/pebble/v2)

type pebble2Engine struct {
	db    *pebble2.DB
	cache interface{ Unref() }
}

func pebble2Options(c config) *pebble2.Options {
	o := &pebble2.Options{
		MemTableSize: uint64(c.memtable),
		// 4 is pebble's default; spelled out because it is Tabula's
		// L0Trigger and goleveldb's CompactionL0Trigger too.
		L0CompactionThreshold: 4,
	}
	if c.pebble2Format == "newest" {
		o.FormatMajorVersion = pebble2.FormatNewest
	}
	for i := range o.Levels {
		o.Levels[i].BlockSize = c.blockSize
		o.Levels[i].FilterPolicy = pebble2bloom.FilterPolicy(c.bloomBits)
		o.Levels[i].Compression = func() *pebble2sstable.CompressionProfile { return pebble2sstable.SnappyCompression }
	}
	return o
}

func openPebble2(dir string, _ bool, c config) (engine, error) {
	ca := pebble2.NewCache(c.cache)
	o := pebble2Options(c)
	o.Cache = ca
	db, err := pebble2.Open(dir, o)
	if err != nil {
		ca.Unref()
		return nil, err
	}
	return &pebble2Engine{db: db, cache: ca}, nil
}

func (e *pebble2Engine) Put(key, value []byte, durable bool) error {
	if durable {
		return e.db.Set(key, value, pebble2.Sync)
	}
	return e.db.Set(key, value, pebble2.NoSync)
}

func (e *pebble2Engine) Get(key []byte) ([]byte, error) { return copyValue(e.db.Get(key)) }

func (e *pebble2Engine) FlushAndCompact() error {
	if err := e.db.Flush(); err != nil {
		return err
	}
	return e.db.Compact(context.Background(), []byte{0}, compactAll, true)
}

func (e *pebble2Engine) Scan() (int, int64, error) {
	it, err := e.db.NewIter(nil)
	if err != nil {
		return 0, 0, err
	}
	return scanIter(it)
}

func (e *pebble2Engine) Close() error {
	err := e.db.Close()
	e.cache.Unref()
	return err
}

// ---- pebble v1 (github.com/cockroachdb/pebble)

type pebble1Engine struct {
	db    *pebble.DB
	cache *pebble.Cache
}

func pebble1Options(c config) *pebble.Options {
	o := &pebble.Options{
		MemTableSize:          uint64(c.memtable),
		L0CompactionThreshold: 4,
		Levels:                make([]pebble.LevelOptions, 7),
	}
	for i := range o.Levels {
		o.Levels[i].BlockSize = c.blockSize
		o.Levels[i].FilterPolicy = pebblebloom.FilterPolicy(c.bloomBits)
		o.Levels[i].Compression = pebble.SnappyCompression
	}
	return o
}

func openPebble1(dir string, _ bool, c config) (engine, error) {
	ca := pebble.NewCache(c.cache)
	o := pebble1Options(c)
	o.Cache = ca
	db, err := pebble.Open(dir, o)
	if err != nil {
		ca.Unref()
		return nil, err
	}
	return &pebble1Engine{db: db, cache: ca}, nil
}

func (e *pebble1Engine) Put(key, value []byte, durable bool) error {
	if durable {
		return e.db.Set(key, value, pebble.Sync)
	}
	return e.db.Set(key, value, pebble.NoSync)
}

func (e *pebble1Engine) Get(key []byte) ([]byte, error) { return copyValue(e.db.Get(key)) }

func (e *pebble1Engine) FlushAndCompact() error {
	if err := e.db.Flush(); err != nil {
		return err
	}
	return e.db.Compact([]byte{0}, compactAll, true)
}

func (e *pebble1Engine) Scan() (int, int64, error) {
	it, err := e.db.NewIter(nil)
	if err != nil {
		return 0, 0, err
	}
	return scanIter(it)
}

func (e *pebble1Engine) Close() error {
	err := e.db.Close()
	e.cache.Unref()
	return err
}

// ---- goleveldb

type levelEngine struct{ db *leveldb.DB }

func levelOptions(c config) *opt.Options {
	return &opt.Options{
		BlockCacheCapacity:  int(min(c.cache, math.MaxInt32)),
		WriteBuffer:         int(c.memtable),
		BlockSize:           c.blockSize,
		Filter:              filter.NewBloomFilter(c.bloomBits),
		Compression:         opt.SnappyCompression,
		CompactionL0Trigger: 4,
	}
}

func openLevelDB(dir string, _ bool, c config) (engine, error) {
	db, err := leveldb.OpenFile(dir, levelOptions(c))
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
