package load

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestWindowRatesAndTotals(t *testing.T) {
	t0 := time.Unix(1000, 0)
	m := NewMeter(t0)
	for i := 0; i < 30; i++ {
		m.Record(Read, []byte("r"), 100, 10*time.Millisecond)
	}
	for i := 0; i < 10; i++ {
		m.Record(Write, []byte("w"), 1000, 0)
	}
	w := m.Roll(t0.Add(10 * time.Second))
	if w.ReadsPerSec() != 3 || w.WritesPerSec() != 1 || w.ReadBytesPerSec() != 300 || w.WriteBytesPerSec() != 1000 {
		t.Fatalf("rates: %v r/s %v w/s %v rB/s %v wB/s", w.ReadsPerSec(), w.WritesPerSec(), w.ReadBytesPerSec(), w.WriteBytesPerSec())
	}
	if got := w.BusyShare(); got < 0.0299 || got > 0.0301 {
		t.Fatalf("busy share %v, want 0.03", got)
	}
	if w.Sampled != 40 || len(w.Keys) != 40 {
		t.Fatalf("sampled %d keys %d, want 40 and 40", w.Sampled, len(w.Keys))
	}
	// The next window counts only what came after the roll.
	m.Record(Write, nil, 5, 0)
	w2 := m.Roll(t0.Add(15 * time.Second))
	if w2.Writes != 1 || w2.Reads != 0 || w2.WriteBytes != 5 || w2.Sampled != 0 || len(w2.Keys) != 0 {
		t.Fatalf("second window: %+v", w2)
	}
	if m.Last().End != w2.End {
		t.Fatalf("Last is not the last closed window")
	}
	if tot := m.Totals(); tot.Reads != 30 || tot.Writes != 11 {
		t.Fatalf("totals %+v", tot)
	}
}

// The load median of a skewed access pattern is where half the requests
// fall, not the middle of the key space: 90% of requests go to keys
// k000..k009, 10% to k010..k999.
func TestQuantilesFollowTheLoad(t *testing.T) {
	for seed := 0; seed < 5; seed++ {
		m := NewMeter(time.Unix(0, 0))
		for i := 0; i < 20000; i++ {
			var k int
			if i%10 != 0 {
				k = i % 10
			} else {
				k = 10 + (i/10)%990
			}
			m.Record(Write, fmt.Appendf(nil, "k%03d", k), 1, 0)
		}
		w := m.Roll(time.Unix(10, 0))
		if len(w.Keys) != SampleSize {
			t.Fatalf("sample of %d keys, want %d", len(w.Keys), SampleSize)
		}
		mid := w.Quantiles(1)
		if len(mid) != 1 || string(mid[0]) >= "k010" {
			t.Fatalf("load median %q, want a key below k010 (where 90%% of the load is)", mid)
		}
		hot := 0
		for _, k := range w.Keys {
			if string(k) < "k010" {
				hot++
			}
		}
		// 90% expected; a uniform sample of 64 falls below 70% with
		// probability < 1e-5.
		if hot < 45 {
			t.Fatalf("only %d of %d sampled keys are hot; the sample is not uniform", hot, len(w.Keys))
		}
	}
}

func TestQuantilesAreOrderedAndDistinct(t *testing.T) {
	m := NewMeter(time.Unix(0, 0))
	for i := 0; i < 1000; i++ {
		m.Record(Read, fmt.Appendf(nil, "%04d", i), 1, 0)
	}
	w := m.Roll(time.Unix(1, 0))
	q := w.Quantiles(7)
	if len(q) != 7 {
		t.Fatalf("%d quantiles, want 7", len(q))
	}
	for i := 1; i < len(q); i++ {
		if string(q[i-1]) >= string(q[i]) {
			t.Fatalf("quantiles out of order: %q", q)
		}
	}
	one := NewMeter(time.Unix(0, 0))
	for i := 0; i < 100; i++ {
		one.Record(Read, []byte("same"), 1, 0)
	}
	if q := one.Roll(time.Unix(1, 0)).Quantiles(4); len(q) != 1 {
		t.Fatalf("quantiles of one key: %q, want one", q)
	}
	if q := (Window{}).Quantiles(3); q != nil {
		t.Fatalf("quantiles of an empty window: %q", q)
	}
}

func TestConcurrentRecordAndRoll(t *testing.T) {
	m := NewMeter(time.Unix(0, 0))
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				m.Record(Kind(i%2), fmt.Appendf(nil, "%d-%d", g, i), 1, time.Microsecond)
			}
		}()
	}
	var reads int64
	for i := 1; i <= 20; i++ {
		w := m.Roll(time.Unix(int64(i), 0))
		reads += w.Reads
		if len(w.Keys) > SampleSize {
			t.Fatalf("window holds %d keys, more than %d", len(w.Keys), SampleSize)
		}
	}
	wg.Wait()
	reads += m.Roll(time.Unix(100, 0)).Reads
	if reads != 8000 {
		t.Fatalf("windows counted %d reads, want 8000", reads)
	}
}

// A check-and-mutate or read-modify-write is one request that reads and
// writes: one of each counted, its bytes written, its row sampled once.
func TestReadWriteCountsBothAndSamplesOnce(t *testing.T) {
	m := NewMeter(time.Unix(0, 0))
	m.Record(ReadWrite, []byte("r"), 7, time.Second)
	w := m.Roll(time.Unix(1, 0))
	if w.Reads != 1 || w.Writes != 1 || w.WriteBytes != 7 || w.ReadBytes != 0 || w.Busy != time.Second {
		t.Fatalf("window %+v, want one read, one write of 7 bytes, 1s busy", w.Totals)
	}
	if w.Sampled != 1 || len(w.Keys) != 1 {
		t.Fatalf("sampled %d keys %d, want the request sampled once", w.Sampled, len(w.Keys))
	}
}
