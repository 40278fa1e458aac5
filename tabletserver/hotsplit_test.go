package tabletserver

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// These tests drive load windows by hand: LoadWindow and SplitCheckInterval
// are off (env.start), rollLoad closes a window at a chosen time, so a
// window of 1 s with 150 requests measures exactly 150 req/s, and
// checkSplits runs one split round.

// logRecords keeps the server's log records at info and above, with their
// attributes flattened to strings.
type logRecords struct {
	mu   sync.Mutex
	recs []logRecord
}

type logRecord struct {
	msg   string
	attrs map[string]string
}

func (l *logRecords) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelInfo }
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler            { return l }
func (l *logRecords) WithGroup(string) slog.Handler                 { return l }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{msg: r.Message, attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.String()
		return true
	})
	l.mu.Lock()
	l.recs = append(l.recs, rec)
	l.mu.Unlock()
	return nil
}

// find returns the records with message msg.
func (l *logRecords) find(msg string) []logRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []logRecord
	for _, r := range l.recs {
		if r.msg == msg {
			out = append(out, r)
		}
	}
	return out
}

// hotEnv is a server with load splits at 100 req/s over 3 windows, a
// cooldown of 10 s, and a clock for its load windows.
type hotEnv struct {
	*env
	srv   *Server
	c     tabulapb.TabletServerClient
	logs  *logRecords
	clock time.Time // end of the last window closed
	ts    int64     // timestamp of the next write
	acked map[string]map[int64]string
}

func newHotEnv(t *testing.T, edit func(*Options)) *hotEnv {
	e := newEnv(t)
	logs := &logRecords{}
	srv := e.start(func(o *Options) {
		o.HotSplitRPS, o.HotSplitWindows, o.HotSplitCooldown = 100, 3, 10*time.Second
		o.SyncMode = "none" // many writes; nothing here crashes
		o.Logger = slog.New(logs)
		if edit != nil {
			edit(o)
		}
	})
	return &hotEnv{env: e, srv: srv, c: e.dial(srv), logs: logs, acked: map[string]map[int64]string{}}
}

// open loads tablet "hot" over the whole table and opens a load window at
// the test's clock.
func (h *hotEnv) open() *tabulapb.TabletRef {
	ref := h.load(h.c, h.assign("hot", nil, nil, h.srv, 1))
	h.clock = time.Now()
	h.srv.rollLoad(h.clock)
	return ref
}

// write writes each row once (a new version of cf:q) in one MutateRows
// call, routing each to the held tablet whose range holds it, and records
// the acknowledged writes.
func (h *hotEnv) write(rows []string, value string) {
	h.t.Helper()
	var entries []*tabulapb.MutateRowsRequest_Entry
	var tss []int64
	for _, row := range rows {
		h.ts++
		tss = append(tss, h.ts)
		entries = append(entries, &tabulapb.MutateRowsRequest_Entry{Tablet: h.route(row), RowKey: []byte(row),
			Mutations: []*tabulapb.Mutation{set("cf", "q", h.ts, value)}})
	}
	resp, err := h.c.MutateRows(h.ctx, &tabulapb.MutateRowsRequest{Entries: entries})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, r := range resp.Entries {
		if r.Code != 0 {
			h.t.Fatalf("write of %s: code %d %s", rows[r.Index], r.Code, r.Message)
		}
		row := rows[r.Index]
		if h.acked[row] == nil {
			h.acked[row] = map[int64]string{}
		}
		h.acked[row][tss[r.Index]] = value
	}
}

// route returns the ref of the held tablet whose range holds row.
func (h *hotEnv) route(row string) *tabulapb.TabletRef {
	for _, t := range h.srv.heldTablets("users") {
		if h.holds(t, row) {
			return &tabulapb.TabletRef{Table: t.table, TabletId: t.id, Epoch: t.epoch}
		}
	}
	h.t.Fatalf("no held tablet holds row %q", row)
	return nil
}

func (h *hotEnv) holds(t *held, row string) bool {
	start, end := t.t.Range()
	return row >= string(start) && (len(end) == 0 || row < string(end))
}

// window writes rows and closes the window d after the previous one.
func (h *hotEnv) window(d time.Duration, rows []string) {
	h.t.Helper()
	for i := 0; i < len(rows); i += 50 {
		h.write(rows[i:min(i+50, len(rows))], fmt.Sprintf("v%d", h.ts))
	}
	h.clock = h.clock.Add(d)
	h.srv.rollLoad(h.clock)
}

// skewed returns n rows: 90% spread over the hot rows a000..a099, 10% over
// b000..b999.
func skewed(n int) []string {
	rows := make([]string, n)
	for i := range rows {
		if i%10 == 0 {
			rows[i] = fmt.Sprintf("b%03d", (i*37)%1000)
		} else {
			rows[i] = fmt.Sprintf("a%03d", (i*7)%100)
		}
	}
	return rows
}

// tablets returns the held tablets of "users" by start key.
func (h *hotEnv) tablets() []*held {
	hs := h.srv.heldTablets("users")
	sort.Slice(hs, func(i, j int) bool {
		a, _ := hs[i].t.Range()
		b, _ := hs[j].t.Range()
		return bytes.Compare(a, b) < 0
	})
	return hs
}

// checkAcked reads every held tablet and fails unless every acknowledged
// write is there, in exactly one tablet.
func (h *hotEnv) checkAcked() {
	h.t.Helper()
	seen := map[string]int{}
	for _, t := range h.tablets() {
		rows, err := readAll(h.ctx, h.c, &tabulapb.ReadRowsRequest{Tablet: &tabulapb.TabletRef{Table: t.table, TabletId: t.id, Epoch: t.epoch}})
		if err != nil {
			h.t.Fatal(err)
		}
		for _, r := range rows {
			seen[string(r.Key)]++
			cells := map[int64]string{}
			for _, c := range r.Cells {
				cells[c.TimestampMicros] = string(c.Value)
			}
			for ts, v := range h.acked[string(r.Key)] {
				if cells[ts] != v {
					h.t.Fatalf("row %s: acknowledged write at ts %d (%q) reads %q", r.Key, ts, v, cells[ts])
				}
			}
		}
	}
	for row := range h.acked {
		if seen[row] != 1 {
			h.t.Fatalf("acknowledged row %s is readable in %d tablets", row, seen[row])
		}
	}
}

// TestLoadSplitAtTheLoadMedian: a tablet whose bytes sit under "z" (40
// rows of 4 KiB) and whose requests sit on a000..a099 (90%) splits, once
// hot for three windows, inside a000..a099 — not at its size midpoint,
// under "z". Two hot windows are not enough. The split is logged with its
// reason and shares, and every acknowledged write reads back.
func TestLoadSplitAtTheLoadMedian(t *testing.T) {
	h := newHotEnv(t, nil)
	ref := h.open()
	big := string(bytes.Repeat([]byte("x"), 4<<10))
	var heavy []string
	for i := range 40 {
		heavy = append(heavy, fmt.Sprintf("z%03d", i))
	}
	h.write(heavy, big)
	if _, err := h.c.FlushTablet(h.ctx, ref); err != nil {
		t.Fatal(err)
	}
	// A quiet minute closes the window that held the bulk writes.
	h.window(time.Minute, nil)
	sizeMid, err := h.tablets()[0].t.SplitKey()
	if err != nil || string(sizeMid) < "z" {
		t.Fatalf("size midpoint %q, %v: the test wants it under z, away from the hot rows", sizeMid, err)
	}

	for w := 1; w <= 2; w++ {
		h.window(time.Second, skewed(150))
		if n := h.srv.checkSplits(h.ctx); n != 0 {
			t.Fatalf("split after %d hot windows of the 3 required", w)
		}
	}
	h.window(time.Second, skewed(150))
	if n := h.srv.checkSplits(h.ctx); n != 1 {
		t.Fatalf("%d splits after 3 hot windows at 150 req/s, want 1", n)
	}
	ts := h.tablets()
	if len(ts) != 2 {
		t.Fatalf("%d tablets after the split, want 2", len(ts))
	}
	_, key := ts[0].t.Range()
	if string(key) <= "a000" || string(key) > "a099" {
		t.Fatalf("load split at %q, want inside the hot rows a000..a099 (the size midpoint is %q)", key, sizeMid)
	}
	logs := h.logs.find("split tablet")
	if len(logs) != 1 {
		t.Fatalf("%d split log lines, want 1", len(logs))
	}
	l := logs[0].attrs
	for k, want := range map[string]string{"event": "split", "reason": "load", "table": "users", "tablet": "hot", "row": string(key)} {
		if l[k] != want {
			t.Errorf("split log %s=%q, want %q (%v)", k, l[k], want, l)
		}
	}
	for _, k := range []string{"rps", "left_share", "right_share", "duration", "left", "right"} {
		if l[k] == "" {
			t.Errorf("split log lacks %s: %v", k, l)
		}
	}
	if l["rps"] != "150" {
		t.Errorf("split log rps=%s, want 150", l["rps"])
	}
	h.checkAcked()
	t.Logf("split at %q (size midpoint %q): %v", key, sizeMid, l)
}

// TestLoadSplitNeedsConsecutiveHotWindows: hot, hot, cool, hot, hot is
// not three hot windows in a row.
func TestLoadSplitNeedsConsecutiveHotWindows(t *testing.T) {
	h := newHotEnv(t, nil)
	h.open()
	for i, rate := range []int{150, 150, 50, 150, 150} {
		h.window(time.Second, skewed(rate))
		if n := h.srv.checkSplits(h.ctx); n != 0 {
			t.Fatalf("split after window %d (rates 150, 150, 50, 150, 150)", i+1)
		}
	}
	h.window(time.Second, skewed(150))
	if n := h.srv.checkSplits(h.ctx); n != 1 {
		t.Fatalf("%d splits after the third hot window in a row, want 1", n)
	}
	h.checkAcked()
}

// TestColdTabletNeverSplitsByLoad: 99 req/s under a threshold of 100
// never splits however long it lasts, and with load splits off
// (HotSplitRPS negative) neither does 1,000 req/s.
func TestColdTabletNeverSplitsByLoad(t *testing.T) {
	for _, c := range []struct {
		name string
		rps  float64
		rate int
	}{{"under the threshold", 100, 99}, {"load splits off", -1, 1000}} {
		t.Run(c.name, func(t *testing.T) {
			h := newHotEnv(t, func(o *Options) { o.HotSplitRPS = c.rps })
			h.open()
			for i := range 6 {
				h.window(time.Second, skewed(c.rate))
				if n := h.srv.checkSplits(h.ctx); n != 0 {
					t.Fatalf("split after window %d at %d req/s", i+1, c.rate)
				}
			}
		})
	}
}

// TestHotRowDoesNotSplit: 95% of the requests on one row cannot be halved
// by any cut: no split, one "hot row" line, and no new attempt (nor line)
// until the cooldown has passed; after it, the row is reported again.
func TestHotRowDoesNotSplit(t *testing.T) {
	h := newHotEnv(t, nil)
	h.open()
	rows := func() []string {
		rs := make([]string, 240) // 120 req/s
		for i := range rs {
			rs[i] = "user#42"
			if i%20 == 0 {
				rs[i] = fmt.Sprintf("user#%03d", i)
			}
		}
		return rs
	}
	// Windows of 2 s: the third (ending at 6 s) finds the hot row; the
	// 10 s cooldown covers windows ending before 16 s; window 8 ends at
	// 16 s with windows 6..8 hot, and finds it again.
	for w := 1; w <= 10; w++ {
		h.window(2*time.Second, rows())
		if n := h.srv.checkSplits(h.ctx); n != 0 {
			t.Fatalf("window %d: a tablet whose load sits on one row split", w)
		}
		want := 0
		switch {
		case w >= 8:
			want = 2
		case w >= 3:
			want = 1
		}
		if got := len(h.logs.find("hot row")); got != want {
			t.Fatalf("after window %d: %d hot row lines, want %d", w, got, want)
		}
	}
	l := h.logs.find("hot row")[0].attrs
	share, _ := strconv.ParseFloat(l["share"], 64)
	if l["row"] != "user#42" || l["tablet"] != "hot" || l["event"] != "hot-row" || share < 0.85 {
		t.Fatalf("hot row line %v, want row user#42 with a share of about 0.95", l)
	}
	h.checkAcked()
}

// TestLoadSplitChildrenCoolDown: the children of a load split make no
// load split during the cooldown (10 s from the parent's last window)
// however hot they are; once it is over they may split again.
func TestLoadSplitChildrenCoolDown(t *testing.T) {
	h := newHotEnv(t, nil)
	h.open()
	for range 3 {
		h.window(time.Second, skewed(150))
	}
	if n := h.srv.checkSplits(h.ctx); n != 1 {
		t.Fatalf("%d splits of the hot parent, want 1", n)
	}
	splitAt := h.clock
	_, mid := h.tablets()[0].t.Range()
	// All the load now on the left child, hot rows below mid.
	var hot []string
	for i := range 150 {
		if row := fmt.Sprintf("a%03d", i%100); row < string(mid) {
			hot = append(hot, row)
		}
	}
	for len(hot) < 150 {
		hot = append(hot, hot...)
	}
	hot = hot[:150]
	for w := 1; ; w++ {
		h.window(time.Second, hot)
		n := h.srv.checkSplits(h.ctx)
		inCooldown := h.clock.Before(splitAt.Add(10 * time.Second))
		if inCooldown && n != 0 {
			t.Fatalf("a child split by load %v after its parent's load split, within the 10 s cooldown", h.clock.Sub(splitAt))
		}
		if !inCooldown {
			if n != 1 {
				t.Fatalf("%d splits once the cooldown was over with the left child hot for %d windows, want 1", n, w)
			}
			break
		}
	}
	if got := len(h.tablets()); got != 3 {
		t.Fatalf("%d tablets after two load splits, want 3", got)
	}
	h.checkAcked()
}

func TestLogKey(t *testing.T) {
	for in, want := range map[string]string{
		"a056":                  "a056",
		"user 42\x00\xff":       `user 42\x00\xff`,
		strings.Repeat("k", 64): strings.Repeat("k", 64),
		strings.Repeat("k", 65): strings.Repeat("k", 64) + "…(65 bytes)",
		"":                      "",
	} {
		if got := logKey([]byte(in)); got != want {
			t.Errorf("logKey(%q) = %q, want %q", in, got, want)
		}
	}
}
