package load

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// SampleSize is how many row keys a window keeps (reservoir sampling: every
// request of the window had the same chance to be kept).
const SampleSize = 64

// Kind says whether a request read, wrote, or both.
type Kind uint8

const (
	Read Kind = iota
	Write
	// ReadWrite is a request that reads its row then writes it (a
	// check-and-mutate, a read-modify-write): it counts one read and one
	// write, its bytes as written, and is sampled once.
	ReadWrite
)

// Totals are a meter's counts since it was created.
type Totals struct {
	Reads, Writes         int64
	ReadBytes, WriteBytes int64
	Busy                  time.Duration // summed duration of the requests
}

func (a Totals) sub(b Totals) Totals {
	return Totals{a.Reads - b.Reads, a.Writes - b.Writes, a.ReadBytes - b.ReadBytes, a.WriteBytes - b.WriteBytes, a.Busy - b.Busy}
}

// Window is what a meter saw between two rolls.
type Window struct {
	Start, End time.Time
	Totals     // counted in the window
	// Keys is a uniform sample of the row keys the window's requests
	// touched, sorted; Sampled is how many requests it was drawn from.
	Keys    [][]byte
	Sampled int64
}

// Seconds is the window's length in seconds (0 for the zero Window).
func (w Window) Seconds() float64 { return w.End.Sub(w.Start).Seconds() }

func (w Window) rate(n int64) float64 {
	if s := w.Seconds(); s > 0 {
		return float64(n) / s
	}
	return 0
}

// ReadsPerSec and the others are the window's rates.
func (w Window) ReadsPerSec() float64      { return w.rate(w.Reads) }
func (w Window) WritesPerSec() float64     { return w.rate(w.Writes) }
func (w Window) ReadBytesPerSec() float64  { return w.rate(w.ReadBytes) }
func (w Window) WriteBytesPerSec() float64 { return w.rate(w.WriteBytes) }

// RequestsPerSec counts reads and writes.
func (w Window) RequestsPerSec() float64 { return w.rate(w.Reads + w.Writes) }

// BusyShare is the time spent serving per second of the window: 0.5 means
// the tablet's requests were in flight half of the time (summed over
// concurrent requests, so it can exceed 1). It stands for the tablet's
// share of the server's CPU and I/O.
func (w Window) BusyShare() float64 {
	if s := w.Seconds(); s > 0 {
		return w.Busy.Seconds() / s
	}
	return 0
}

// Quantiles returns n keys that cut the sample into n+1 parts of equal
// request counts (fewer when the sample is smaller), in order. With n = 1
// it is the key that halves the sampled load.
func (w Window) Quantiles(n int) [][]byte {
	if n <= 0 || len(w.Keys) == 0 {
		return nil
	}
	out := make([][]byte, 0, n)
	for i := 1; i <= n; i++ {
		k := w.Keys[min(len(w.Keys)-1, i*len(w.Keys)/(n+1))]
		if len(out) > 0 && bytes.Equal(out[len(out)-1], k) {
			continue
		}
		out = append(out, k)
	}
	return out
}

// Meter counts one tablet's requests. Its methods are safe for concurrent
// use; Record is cheap enough for every data call.
type Meter struct {
	reads, writes         atomic.Int64
	readBytes, writeBytes atomic.Int64
	busy                  atomic.Int64 // nanoseconds
	seen                  atomic.Int64 // requests of the open window

	mu     sync.Mutex
	sample [][]byte // the open window's reservoir
	start  time.Time
	base   Totals // totals when the open window started
	last   Window
}

// NewMeter returns a meter whose first window opens at now.
func NewMeter(now time.Time) *Meter {
	m := &Meter{}
	m.Open(now)
	return m
}

// Open starts the meter's first window at now, if none has started: the
// zero Meter is ready for Record, and a window whose start was never set
// reports no rates rather than rates over the time since year 1.
func (m *Meter) Open(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.start.IsZero() {
		m.start = now
	}
}

// Record counts one request of kind k on row that moved n bytes and took d.
// row may be nil (a scan records its first row; a request with no row
// records none). The meter copies what it keeps.
func (m *Meter) Record(k Kind, row []byte, n int, d time.Duration) {
	switch k {
	case Read:
		m.reads.Add(1)
		m.readBytes.Add(int64(n))
	case Write:
		m.writes.Add(1)
		m.writeBytes.Add(int64(n))
	case ReadWrite:
		m.reads.Add(1)
		m.writes.Add(1)
		m.writeBytes.Add(int64(n))
	}
	m.busy.Add(int64(d))
	if row == nil {
		return
	}
	seen := m.seen.Add(1)
	// Algorithm R: the seen-th request replaces a random slot with
	// probability SampleSize/seen.
	slot := seen - 1
	if seen > SampleSize {
		slot = rand.Int64N(seen)
		if slot >= SampleSize {
			return
		}
	}
	key := bytes.Clone(row)
	m.mu.Lock()
	if int(slot) < len(m.sample) {
		m.sample[slot] = key
	} else {
		m.sample = append(m.sample, key)
	}
	m.mu.Unlock()
}

// Totals returns the counts since the meter was created.
func (m *Meter) Totals() Totals {
	return Totals{
		Reads: m.reads.Load(), Writes: m.writes.Load(),
		ReadBytes: m.readBytes.Load(), WriteBytes: m.writeBytes.Load(),
		Busy: time.Duration(m.busy.Load()),
	}
}

// Roll closes the open window at now, opens the next and returns the
// closed one (also kept as Last).
func (m *Meter) Roll(now time.Time) Window {
	m.mu.Lock()
	defer m.mu.Unlock()
	tot := m.Totals()
	keys := m.sample
	m.sample = make([][]byte, 0, len(keys))
	sampled := m.seen.Swap(0)
	slices.SortFunc(keys, bytes.Compare)
	start := m.start
	if start.IsZero() {
		start = now
	}
	m.last = Window{Start: start, End: now, Totals: tot.sub(m.base), Keys: keys, Sampled: sampled}
	m.start, m.base = now, tot
	return m.last
}

// Last returns the last closed window (the zero Window before the first
// roll).
func (m *Meter) Last() Window {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last
}
