package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/internal/testkit/writers"
)

// chromium returns the headless browser the status page test drives:
// TABULA_CHROMIUM, else chromium on the PATH (`make tools` installs
// Debian's). Without one the test is skipped, unless
// TABULA_REQUIRE_CHROMIUM is set (make test).
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TABULA_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("TABULA_REQUIRE_CHROMIUM") != "" {
		t.Fatal("no chromium: run `make tools` (it installs Debian's chromium) or set TABULA_CHROMIUM")
	}
	t.Skip("no chromium: run `make tools` or set TABULA_CHROMIUM")
	return ""
}

// heatCell is one rect of the heatmap as the browser sees it.
type heatCell struct {
	Start string  `json:"start"`
	End   string  `json:"end"`
	Value float64 `json:"value"`
}

// TestStatusPageInABrowser: a dev cluster under load, writes hammering one
// key range [b, d) of a pre-split table and touching the rest lightly. In
// headless chromium the status page shows the servers and the table, and
// the table's heatmap puts its hottest cells inside [b, d), off the
// middle of the key space so that a heatmap drawn upside down fails. With
// TABULA_SCREENSHOT=docs/status-page.png it saves a screenshot of the
// table's page there (relative to the repository).
func TestStatusPageInABrowser(t *testing.T) {
	slow(t)
	browser := chromium(t)
	d := newDevProc(t)
	d.extra = []string{"--load-interval", "1s", "--load-window", "1s"}
	addr := d.startDev(t)
	cl := d.devClient(t, addr)
	defer cl.Close()
	httpAddr := readAddrFile(t, filepath.Join(d.data, "http.addr"))

	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	const table = "heat"
	if err := cl.Admin().CreateTable(ctx, table, []families.Family{{Name: "cf"}},
		[][]byte{[]byte("b"), []byte("d"), []byte("f"), []byte("h")}); err != nil {
		t.Fatal(err)
	}
	tbl := cl.Open(table)

	// Load: four writers on [b, d), one writer touching every other range
	// now and then, until the page shows what we look for.
	prefixes := []string{"b", "bm", "c", "cm", "a", "e", "g", "x"}
	ws := writers.Start(t, len(prefixes), func(w *writers.Writer, i int) bool {
		prefix, pause := prefixes[w.N], time.Duration(0)
		if w.N >= 4 { // the other ranges
			pause = 200 * time.Millisecond
		}
		row := fmt.Sprintf("%s%05d", prefix, i%5000)
		m := client.NewMutation().Set("cf", []byte("q"), writeTS, []byte("value-"+row))
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		err := tbl.Apply(ctx, []byte(row), m)
		cancel()
		if err != nil && !w.Stopping() {
			t.Errorf("Apply(%s): %v", row, err)
			return false
		}
		time.Sleep(pause)
		return true
	})
	defer ws.Stop()

	actx, acancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1280, 1000))...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	bctx, tcancel := context.WithTimeout(bctx, 90*time.Second)
	defer tcancel()

	// The summary: both servers and the table.
	base := "http://" + httpAddr
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("reading %s: %v", sel, err)
		}
		return s
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#summary"))); err != nil {
		t.Fatalf("loading the summary: %v", err)
	}
	live, servers, tables, events := text("#servers-live"), text("#servers"), text("#tables"), text("#events")
	if strings.TrimSpace(live) != "2" || !strings.Contains(servers, "ts-1") || !strings.Contains(servers, "ts-2") {
		t.Errorf("summary shows %q servers live; servers table:\n%s", live, servers)
	}
	if !strings.Contains(tables, table) {
		t.Errorf("summary's tables lack %s:\n%s", table, tables)
	}
	if !strings.Contains(events, "elected leader") {
		t.Errorf("summary's events lack the master's election:\n%s", events)
	}

	// The heatmap, once a few reports are in: its hottest cells lie in
	// [b, d).
	var cells []heatCell
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := chromedp.Do(bctx, chromedp.Navigate(base+"/tables/"+table+"?by=writes"), chromedp.WaitReady(chromedp.CSS("body"))); err != nil {
			t.Fatalf("loading the table page: %v", err)
		}
		var err error
		cells, err = chromedp.Run(bctx, chromedp.Evaluate[[]heatCell](`Array.from(document.querySelectorAll('#heatmap rect.cell')).map(r =>
			({start: r.dataset.start, end: r.dataset.end, value: parseFloat(r.dataset.value)}))`))
		if err != nil {
			t.Fatalf("reading the heatmap: %v", err)
		}
		columns, err := chromedp.Run(bctx, chromedp.Evaluate[string](`(document.querySelector('#heatmap') || {dataset: {}}).dataset.columns || ""`))
		if err != nil {
			t.Fatalf("reading the heatmap's columns: %v", err)
		}
		if n, _ := strconv.Atoi(columns); len(cells) > 0 && n >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no heatmap of 4 columns after 30s (%d cells, %q columns)", len(cells), columns)
		}
		time.Sleep(500 * time.Millisecond)
	}
	slices.SortFunc(cells, func(a, b heatCell) int { return int(b.Value*1000) - int(a.Value*1000) })
	if cells[0].Value <= 0 {
		t.Fatalf("the heatmap shows no writes: %+v", cells[:min(5, len(cells))])
	}
	hot := 0
	for _, c := range cells {
		if c.Value < cells[0].Value/2 {
			break
		}
		hot++
		if c.Start < "b" || c.End > "d" || c.End == "+inf" || c.Start == "-inf" {
			t.Errorf("a hot cell [%s, %s) at %.1f writes/s lies outside [b, d) (hottest %.1f)", c.Start, c.End, c.Value, cells[0].Value)
		}
	}
	t.Logf("%d cells, %d within half of the hottest (%.1f writes/s)", len(cells), hot, cells[0].Value)

	// A tablet server's own page, linked from the summary.
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/servers/ts-1/")); err != nil {
		t.Fatalf("loading ts-1's page: %v", err)
	}
	if h1 := text("h1"); !strings.Contains(h1, "ts-1") {
		t.Errorf("ts-1's page is titled %q", h1)
	}
	if tablets := text("#tablets"); !strings.Contains(tablets, table) {
		t.Errorf("ts-1's page lists no tablet of %s:\n%s", table, tablets)
	}

	if p := os.Getenv("TABULA_SCREENSHOT"); p != "" {
		// A longer history makes a better picture.
		for i := 0; i < 40; i++ {
			if err := chromedp.Do(bctx, chromedp.Navigate(base+"/tables/"+table+"?by=writes")); err != nil {
				t.Fatal(err)
			}
			if n, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector('#heatmap').dataset.columns`)); err != nil || n >= "30" && len(n) == 2 {
				break
			}
			time.Sleep(time.Second)
		}
		if err := chromedp.Do(bctx, chromedp.Navigate(base+"/tables/"+table+"?by=writes"), chromedp.WaitVisible(chromedp.CSS("#heatmap"))); err != nil {
			t.Fatalf("loading the page to screenshot: %v", err)
		}
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100)) // 100: PNG
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join("..", p) // tests run in e2e/
		}
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("saved a screenshot to %s", p)
	}
}

// readAddrFile waits for a process to write its address file.
func readAddrFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(readyWait)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(b)) > 0 {
			return string(bytes.TrimSpace(b))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no %s within %v", path, readyWait)
	return ""
}
