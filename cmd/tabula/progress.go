package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/export"
)

// progress counts the rows, cells and bytes of a long command (export,
// import, bulkload, count, drop-rows) and shows them while it runs: on a
// terminal as a progress bar redrawn in place (github.com/schollz/progressbar)
// with the rates and, when the command can estimate how far it is, the
// percentage and the time left; with --progress on anything else as a
// plain line every second. finish prints the summary line either way.
type progress struct {
	verb  string
	w     io.Writer
	begin time.Time

	rows, cells, bytes atomic.Int64
	display            bool
	// fraction, when set (estimate), says how much of the work is done,
	// 0 to 1, or a negative number while it cannot tell.
	fraction atomic.Pointer[func() float64]

	done     chan struct{}
	wg       sync.WaitGroup
	stopOnce sync.Once
}

// progressSteps is the bar's resolution: fraction × progressSteps.
const progressSteps = 1000

func startProgress(cmd *cobra.Command, verb string) *progress {
	p := &progress{verb: verb, w: cmd.ErrOrStderr(), begin: time.Now(), done: make(chan struct{})}
	forced, _ := cmd.Flags().GetBool("progress")
	terminal := false
	if f, ok := p.w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			terminal = true
		}
	}
	switch {
	case terminal:
		p.display = true
		p.wg.Add(1)
		go p.drawBar()
	case forced:
		p.display = true
		p.wg.Add(1)
		go p.printLines()
	}
	return p
}

// shown reports whether the progress is displayed (a terminal, or
// --progress): work done only for the display can be skipped otherwise.
func (p *progress) shown() bool { return p.display }

// estimate sets how the command measures how far it is.
func (p *progress) estimate(f func() float64) { p.fraction.Store(&f) }

// done reports the fraction done, or a negative number.
func (p *progress) done01() float64 {
	if f := p.fraction.Load(); f != nil {
		return min((*f)(), 1)
	}
	return -1
}

func (p *progress) add(rows, cells, bytes int64) {
	p.rows.Add(rows)
	p.cells.Add(cells)
	p.bytes.Add(bytes)
}

// drawBar redraws the bar five times a second until stop.
func (p *progress) drawBar() {
	defer p.wg.Done()
	bar := progressbar.NewOptions64(-1,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(p.verb),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionSetPredictTime(true),
	)
	known := false
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			_ = bar.Clear()
			return
		case <-t.C:
		}
		f := p.done01()
		if f >= 0 && !known {
			// From now on a bar with a percentage and the time left.
			known = true
			bar.ChangeMax64(progressSteps)
		}
		bar.Describe(fmt.Sprintf("%s: %s", p.verb, p.rates()))
		if known {
			_ = bar.Set64(int64(f * progressSteps))
		} else {
			_ = bar.Add64(1) // the spinner turns
		}
	}
}

// printLines prints a line a second until stop.
func (p *progress) printLines() {
	defer p.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
			fmt.Fprintf(p.w, "%s: %s%s\n", p.verb, p.line(), p.eta())
		}
	}
}

// rates renders the counters and their rates, for the bar.
func (p *progress) rates() string {
	if p.rows.Load() == 0 && p.cells.Load() == 0 {
		return time.Since(p.begin).Round(time.Second).String() // a call that counts nothing (drop-rows)
	}
	secs := max(time.Since(p.begin).Seconds(), 1e-3)
	return fmt.Sprintf("%d rows, %d cells (%.0f cells/s, %.1f MiB/s)",
		p.rows.Load(), p.cells.Load(), float64(p.cells.Load())/secs, float64(p.bytes.Load())/secs/(1<<20))
}

// eta renders the fraction done and the time left, when known.
func (p *progress) eta() string {
	f := p.done01()
	if f <= 0 {
		return ""
	}
	el := time.Since(p.begin)
	left := time.Duration(float64(el) * (1 - f) / f)
	return fmt.Sprintf(", %.0f%% done, about %s left", f*100, left.Round(time.Second))
}

// line renders the counters and the cell rate so far.
func (p *progress) line() string {
	el := time.Since(p.begin)
	secs := max(el.Seconds(), 1e-3)
	return fmt.Sprintf("%d rows, %d cells, %d bytes in %s (%.0f cells/s, %.1f MiB/s)",
		p.rows.Load(), p.cells.Load(), p.bytes.Load(), el.Round(time.Millisecond),
		float64(p.cells.Load())/secs, float64(p.bytes.Load())/secs/(1<<20))
}

// stop ends the progress goroutine; it may be called more than once.
func (p *progress) stop() {
	p.stopOnce.Do(func() { close(p.done) })
	p.wg.Wait()
}

// finish stops the progress display and prints the summary line; after a
// failure it says what was done before it.
func (p *progress) finish(what string, err error) {
	p.stop()
	if err != nil {
		fmt.Fprintf(p.w, "%s failed after %s\n", p.verb, p.line())
		return
	}
	fmt.Fprintf(p.w, "%s %s\n", what, p.line())
}

// measureSources makes an import's progress estimate how far it is: the
// bytes read of the files against their sizes, when every file is a local
// one whose size is known (an object store's or standard input: no
// estimate, only the rates).
func measureSources(p *progress, srcs []export.Source) []export.Source {
	var total int64
	for _, s := range srcs {
		fi, err := os.Stat(s.Name)
		if err != nil || !fi.Mode().IsRegular() {
			return srcs
		}
		total += fi.Size()
	}
	if total == 0 {
		return srcs
	}
	var read atomic.Int64
	out := make([]export.Source, len(srcs))
	for i, s := range srcs {
		open := s.Open
		out[i] = export.Source{Name: s.Name, Open: func(ctx context.Context) (io.ReadCloser, error) {
			rc, err := open(ctx)
			if err != nil {
				return nil, err
			}
			if f, ok := rc.(*os.File); ok {
				// A Parquet reader reads a local file in place (ReadAt).
				return countingFile{countingReadCloser{rc, &read}, f}, nil
			}
			return countingReadCloser{rc, &read}, nil
		}}
	}
	p.estimate(func() float64 { return float64(read.Load()) / float64(total) })
	return out
}

// countingReadCloser adds what it reads to n.
type countingReadCloser struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c countingReadCloser) Read(b []byte) (int, error) {
	k, err := c.ReadCloser.Read(b)
	c.n.Add(int64(k))
	return k, err
}

// countingFile is a countingReadCloser of a local file that counts what
// is read with ReadAt too.
type countingFile struct {
	countingReadCloser
	f *os.File
}

func (c countingFile) ReadAt(b []byte, off int64) (int, error) {
	k, err := c.f.ReadAt(b, off)
	c.n.Add(int64(k))
	return k, err
}

func (c countingFile) Stat() (os.FileInfo, error) { return c.f.Stat() }

// keyProgress estimates how far a scan in key order is from the table's
// samples (SampleRowKeys: a key about every few MiB and the bytes before
// it): the bytes before the last sample at or below key, over the bytes
// of [start, end). It returns nil when the samples cannot tell.
func keyProgress(samples []client.KeySample, start, end []byte) func(key []byte) float64 {
	if len(samples) < 2 {
		return nil
	}
	total := samples[len(samples)-1].OffsetBytes
	if len(samples[len(samples)-1].Key) == 0 {
		samples = samples[:len(samples)-1] // the table's end, an empty key
	}
	before := func(key []byte) int64 {
		i := sort.Search(len(samples), func(i int) bool { return bytes.Compare(samples[i].Key, key) > 0 })
		if i == 0 {
			return 0
		}
		return samples[i-1].OffsetBytes
	}
	lo := before(start)
	hi := total
	if len(end) > 0 {
		hi = before(end)
	}
	if hi <= lo {
		return nil
	}
	return func(key []byte) float64 { return float64(before(key)-lo) / float64(hi-lo) }
}

// rangesProgress estimates how far an export of [start, end) is from the
// table's samples (keyProgress): each key range a worker exports counts
// the share of the bytes between its start and the last key it reported,
// or its end once written whole. It returns nil when the samples cannot
// tell; otherwise its func is export.ExportOptions.At, and it has set p's
// estimate.
func rangesProgress(p *progress, samples []client.KeySample, start, end []byte) func(rangeStart, rangeEnd, key []byte) {
	f := keyProgress(samples, start, end)
	if f == nil {
		return nil
	}
	endOf := func(rangeEnd []byte) float64 {
		if len(rangeEnd) == 0 || (len(end) > 0 && bytes.Compare(rangeEnd, end) >= 0) {
			return 1 // the export's end
		}
		return f(rangeEnd)
	}
	var (
		mu      sync.Mutex
		reached = map[string]float64{} // by range start: its share done
		total   float64
	)
	p.estimate(func() float64 {
		mu.Lock()
		defer mu.Unlock()
		return total
	})
	return func(rangeStart, rangeEnd, key []byte) {
		at := endOf(rangeEnd)
		if key != nil {
			at = f(key)
		}
		share := max(at-max(f(rangeStart), 0), 0)
		mu.Lock()
		total += share - reached[string(rangeStart)]
		reached[string(rangeStart)] = share
		mu.Unlock()
	}
}
