package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tabuladb/tabula/internal/testkit/shuffle"
	"github.com/tabuladb/tabula/wal"
)

// result is one workload's measurement in one child process.
type result struct {
	Workload string `json:"workload"`
	Engine   string `json:"engine"`
	Ops      int    `json:"ops"`
	Bytes    int64  `json:"bytes"`
	Nanos    int64  `json:"nanos"`
	// Writes is the number of write system calls the whole process made
	// during the workload (/proc/self/io syscw, background threads
	// included); -1 when unknown.
	Writes int64 `json:"writes"`
}

func (r result) elapsed() time.Duration { return time.Duration(r.Nanos) }
func (r result) opsPerSec() float64     { return float64(r.Ops) / r.elapsed().Seconds() }
func (r result) writesPerOp() float64 {
	if r.Writes < 0 || r.Ops == 0 {
		return -1
	}
	return float64(r.Writes) / float64(r.Ops)
}

// Workload names; sizeSuffix adds the value size.
const (
	wSeqInsert    = "seq insert"
	wRandInsert   = "random insert"
	wFlushCompact = "flush+compact"
	wRandRead     = "random read"
	wScan         = "full scan"
	wDurable      = "durable writes"
	wPeakRSS      = "peak RSS"
)

func sizeSuffix(size int) string { return fmt.Sprintf(" %d B", size) }

func key(i int) []byte {
	k := make([]byte, 16)
	binary.BigEndian.PutUint64(k[8:], uint64(i))
	copy(k, "tabulakey")
	return k
}

// value is half random bytes, half zeros, so about 2× compressible.
func value(r *rand.Rand, size int) []byte {
	v := make([]byte, size)
	r.Read(v[:size/2])
	return v
}

// writeSyscalls returns the process's write system calls so far (syscw of
// /proc/self/io: write, pwrite, writev, …), or -1 where there is no such
// file.
func writeSyscalls() int64 {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		return -1
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "syscw:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// measure times fn and counts the write system calls it made.
func measure(workload, engine string, fn func() (ops int, bytes int64, err error)) (result, error) {
	w0 := writeSyscalls()
	start := time.Now()
	ops, b, err := fn()
	d := time.Since(start)
	w1 := writeSyscalls()
	writes := int64(-1)
	if w0 >= 0 && w1 >= 0 {
		writes = w1 - w0
	}
	return result{Workload: workload, Engine: engine, Ops: ops, Bytes: b, Nanos: d.Nanoseconds(), Writes: writes}, err
}

// runSize runs the workloads of one value size on one engine: sequential
// insert into a fresh store, then random insert into another, flush and
// full compaction, random point reads and a full scan of that one.
func runSize(dir, name string, open opener, c config, size, count, reads int, seed int64) ([]result, error) {
	r := rand.New(rand.NewSource(seed))
	suffix := sizeSuffix(size)
	// The insert rows name Tabula's sync mode: its ratio to a peer means
	// something only next to what each promises (printConfig).
	insertSuffix := fmt.Sprintf("%s (Tabula sync=%s)", suffix, c.tabulaSync)
	var out []result
	add := func(res result, err error) error {
		out = append(out, res)
		return err
	}

	e, err := open(dir+"-seq", false, c)
	if err != nil {
		return nil, err
	}
	err = add(measure(wSeqInsert+insertSuffix, name, func() (int, int64, error) {
		for i := 0; i < count; i++ {
			if err := e.Put(key(i), value(r, size), false); err != nil {
				return i, 0, err
			}
		}
		return count, int64(count * (16 + size)), nil
	}))
	if cerr := e.Close(); err == nil {
		err = cerr
	}
	os.RemoveAll(dir + "-seq")
	if err != nil {
		return out, err
	}

	e, err = open(dir+"-rand", false, c)
	if err != nil {
		return out, err
	}
	defer os.RemoveAll(dir + "-rand")
	// The same keys as the sequential insert, each once, in an order
	// computed on the fly: a rand.Perm slice (8 bytes per key) would sit
	// in the measured process's heap, in every engine's peak RSS.
	perm := shuffle.New(count, r.Int63())
	err = add(measure(wRandInsert+insertSuffix, name, func() (int, int64, error) {
		for n := range count {
			if err := e.Put(key(perm.At(n)), value(r, size), false); err != nil {
				return n, 0, err
			}
		}
		return count, int64(count * (16 + size)), nil
	}))
	if err == nil {
		err = add(measure(wFlushCompact+suffix, name, func() (int, int64, error) {
			return 1, 0, e.FlushAndCompact()
		}))
	}
	if err == nil {
		err = add(measure(wRandRead+suffix, name, func() (int, int64, error) {
			var got int64
			for i := 0; i < reads; i++ {
				v, err := e.Get(key(r.Intn(count)))
				if err != nil {
					return i, got, err
				}
				got += int64(len(v) + 16)
			}
			return reads, got, nil
		}))
	}
	if err == nil {
		err = add(measure(wScan+suffix, name, func() (int, int64, error) {
			n, b, err := e.Scan()
			if err == nil && n != count {
				err = fmt.Errorf("enginebench: %s scan saw %d keys, want %d", name, n, count)
			}
			return n, b, err
		}))
	}
	if cerr := e.Close(); err == nil {
		err = cerr
	}
	return out, err
}

// durableName is the workload name of durable writes from n writers.
func durableName(writers int) string {
	return fmt.Sprintf("%s ×%d (Tabula sync=%s)", wDurable, writers, wal.SyncAlways)
}

// runDurable runs synced 100-byte writes from 1 and from 64 concurrent
// writers, each into a fresh store.
func runDurable(dir, name string, open opener, c config, ops int) ([]result, error) {
	var out []result
	for _, writers := range []int{1, 64} {
		d := fmt.Sprintf("%s-%d", dir, writers)
		e, err := open(d, true, c)
		if err != nil {
			return out, err
		}
		if err := warmDurable(e, *flagDurableWarmup); err != nil {
			e.Close()
			return out, err
		}
		n := ops
		if writers > 1 {
			n *= 8 // many writers go faster; give them enough work to measure
		}
		res, err := measure(durableName(writers), name, func() (int, int64, error) {
			var wg sync.WaitGroup
			errs := make([]error, writers)
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					r := rand.New(rand.NewSource(int64(w)))
					for i := w; i < n; i += writers {
						if err := e.Put(key(i), value(r, 100), true); err != nil {
							errs[w] = err
							return
						}
					}
				}(w)
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					return 0, 0, err
				}
			}
			return n, int64(n * 116), nil
		})
		out = append(out, res)
		if cerr := e.Close(); err == nil {
			err = cerr
		}
		os.RemoveAll(d)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// warmDurable brings a fresh store to the steady state of one that has
// been written for a while before its durable writes are measured: ops
// writes by 64 writers, half of them before a first flush and half before
// a second, so that a log that recycles its files (Tabula's segments,
// pebble's WAL) writes the measured records over a file an earlier flush
// freed, about ops/2 records long. Nothing when ops is 0.
func warmDurable(e engine, ops int) error {
	if ops <= 0 {
		return nil
	}
	const writers = 64
	for half := range 2 {
		var wg sync.WaitGroup
		errs := make([]error, writers)
		for w := range writers {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				r := rand.New(rand.NewSource(int64(-1 - w)))
				for i := w; i < ops/2; i += writers {
					// Keys apart from the measured ones (key(i), i < the
					// durable ops).
					if err := e.Put(key(1<<40+half*ops+i), value(r, 100), false); err != nil {
						errs[w] = err
						return
					}
				}
			}(w)
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		if err := e.FlushAndCompact(); err != nil {
			return err
		}
	}
	return nil
}
