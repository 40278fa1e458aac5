package tablet

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/wal"
)

var crashSeed = flag.Int64("crash.seed", 0, "seed of TestCrashKillNine and TestCrashKillNineFaulty (0 = random); also env TABULA_CRASH_SEED")

// Environment of the child process of TestCrashKillNine.
const (
	crashDirEnv   = "TABULA_CRASH_DIR"
	crashRoundEnv = "TABULA_CRASH_ROUND"
	crashWriters  = 6
)

// crashOptions are the options of the crash test's tablet, in the child
// (background work on, small memtable, so kills land during flushes and
// compactions) and in the parent's checks.
func crashOptions(dir string) Options {
	return Options{
		Dir: dir, Create: true,
		Families: []families.Family{
			{Name: "a", Bloom: families.BloomRow},
			{Name: "b", Compression: families.CompressionSnappy, BlockSize: families.MinBlockSize},
		},
		SyncMode:     wal.SyncAlways,
		MemtableSize: 64 << 10,
		L0Trigger:    2,
	}
}

// crashRow is the row key of writer w's n-th write in a round.
func crashRow(round, w, n int) string { return fmt.Sprintf("r%02d-w%d-%06d", round, w, n) }

// crashValue is the value stored under row in family fam: it encodes the
// row (and so the writer's sequence), so any cell that was not written by
// the child, or was mixed up with another, is detected.
func crashValue(row, fam string) []byte {
	v := fmt.Sprintf("%s|%s|", row, fam)
	return []byte(v + strings.Repeat(string(rune('a'+len(row)%26)), 120))
}

// TestCrashChild is the child process of TestCrashKillNine: it writes
// until it is killed. It is skipped unless the parent set TABULA_CRASH_DIR.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("only run as the child of TestCrashKillNine")
	}
	round, err := strconv.Atoi(os.Getenv(crashRoundEnv))
	if err != nil {
		t.Fatalf("bad %s: %v", crashRoundEnv, err)
	}
	tb, err := Open(crashOptions(dir))
	if err != nil {
		t.Fatalf("child Open: %v", err)
	}
	defer tb.Close()
	if _, err := os.Stdout.Write([]byte("READY\n")); err != nil {
		t.Fatal(err)
	}
	// The parent kills us long before this; the deadline only keeps an
	// orphan from running forever.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, crashWriters)
	for w := 0; w < crashWriters; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				row := crashRow(round, w, n)
				muts := []cell.Mutation{
					{Kind: cell.SetCell, Family: "a", Qualifier: []byte("v"), Timestamp: int64(n + 1), Value: crashValue(row, "a")},
					{Kind: cell.SetCell, Family: "b", Qualifier: []byte("v"), Timestamp: int64(n + 1), Value: crashValue(row, "b")},
				}
				if err := tb.Apply(ctx, []byte(row), muts); err != nil {
					if ctx.Err() == nil {
						errs <- fmt.Errorf("Apply(%s): %w", row, err)
					}
					return
				}
				// One write per line, so a kill never leaves a torn ACK
				// that looks whole.
				if _, err := os.Stdout.Write([]byte("ACK " + row + " " + string(crashValue(row, "a")) + "\n")); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestCrashKillNine runs a child process that writes to a tablet with
// background flushes and compactions, kills it with SIGKILL at a random
// moment, reopens the tablet and checks that every acknowledged write is
// there, nothing unwritten is, and no write is half there. Rounds repeat on
// the same folder so that later kills hit larger flushes and compactions.
func TestCrashKillNine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	seed := time.Now().UnixNano()
	if s, err := strconv.ParseInt(os.Getenv("TABULA_CRASH_SEED"), 10, 64); err == nil && s != 0 {
		seed = s
	}
	if *crashSeed != 0 {
		seed = *crashSeed
	}
	t.Logf("seed %d (replay the kill times with -crash.seed %d)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	dir := t.TempDir()
	acked := map[string]bool{}
	const rounds = 8
	for round := 0; round < rounds; round++ {
		delay := time.Duration(10+rng.Intn(391)) * time.Millisecond
		rows, lines := runCrashChild(t, crashChild{test: "TestCrashChild", env: []string{crashDirEnv + "=" + dir, crashRoundEnv + "=" + strconv.Itoa(round)}}, round, delay)
		for _, row := range rows {
			acked[row] = true
		}
		present := checkCrashTablet(t, dir, round, acked)
		t.Logf("round %d: killed %v after READY; %d acks (%d lines), %d rows present in total", round, delay, len(rows), lines, present)
	}
}

// crashChild says which child process runCrashChild runs.
type crashChild struct {
	test string   // the child's test function
	env  []string // added to the child's environment
	// line, if set, is given each line of the child's output that is
	// neither READY nor an ACK; it returns false for a line it does not
	// know, which then goes into the failure report.
	line func(line string) bool
}

// runCrashChild runs one child, kills it delay after it is ready, and
// returns the rows it acknowledged (lines written "ACK <row> <the value
// crashValue(row, "a")>").
func runCrashChild(t *testing.T, c crashChild, round int, delay time.Duration) (rows []string, lines int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+c.test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), c.env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	done := make(chan struct{})
	var acks []string
	var other strings.Builder // the child's other output, for failure reports
	var n int
	var readErr error
	go func() {
		defer close(done)
		br := bufio.NewReader(out)
		sawReady := false
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				if err != io.EOF {
					readErr = err
				}
				return // a last line without '\n' is torn: not an ACK
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "READY" && !sawReady:
				sawReady = true
				close(ready)
			case strings.HasPrefix(line, "ACK "):
				n++
				f := strings.Fields(line)
				if len(f) != 3 || f[2] != string(crashValue(f[1], "a")) {
					readErr = fmt.Errorf("malformed ACK line %q", line)
					continue
				}
				acks = append(acks, f[1])
			case c.line != nil && c.line(line):
			default:
				other.WriteString(line + "\n")
			}
		}
	}()
	select {
	case <-ready:
		time.Sleep(delay)
	case <-done:
	case <-time.After(30 * time.Second):
	}
	killErr := cmd.Process.Kill()
	<-done
	werr := cmd.Wait()
	select {
	case <-ready:
	default:
		t.Fatalf("round %d: the child never became ready (kill: %v, wait: %v); output:\n%s%s", round, killErr, werr, other.String(), stderr.String())
	}
	if readErr != nil {
		t.Fatalf("round %d: %v", round, readErr)
	}
	if werr == nil || !strings.Contains(werr.Error(), "killed") {
		t.Fatalf("round %d: the child ended on its own (%v) before the kill; output:\n%s%s", round, werr, other.String(), stderr.String())
	}
	return acks, n
}

// checkCrashTablet reopens the tablet and checks it against the acks; it
// returns the number of rows present.
func checkCrashTablet(t *testing.T, dir string, round int, acked map[string]bool) int {
	t.Helper()
	opts := crashOptions(dir)
	opts.DisableBackgroundWork = true
	tb, err := Open(opts)
	if err != nil {
		t.Fatalf("round %d: reopen after kill -9: %v", round, err)
	}
	defer func() {
		if err := tb.Close(); err != nil {
			t.Errorf("round %d: Close: %v", round, err)
		}
	}()
	it, err := tb.NewRowIterator(bg, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	present := map[string]bool{}
	for it.Next() {
		row := string(it.Row())
		present[row] = true
		var r, w, n int
		if _, err := fmt.Sscanf(row, "r%02d-w%d-%06d", &r, &w, &n); err != nil || crashRow(r, w, n) != row || r > round || w >= crashWriters {
			t.Errorf("round %d: row %q was never written by the child", round, row)
			continue
		}
		cs := it.Cells()
		if len(cs) != 2 || cs[0].Family != "a" || cs[1].Family != "b" {
			t.Errorf("round %d: row %s is partial or has extra cells: %s", round, row, render(cs))
			continue
		}
		for _, c := range cs {
			if string(c.Qualifier) != "v" || c.Timestamp != int64(n+1) || !bytes.Equal(c.Value, crashValue(row, c.Family)) {
				t.Errorf("round %d: row %s has a cell the child did not write: %s:%s@%d=%q", round, row, c.Family, c.Qualifier, c.Timestamp, c.Value)
			}
		}
	}
	if err := it.Close(); err != nil {
		t.Fatalf("round %d: scan after kill -9: %v", round, err)
	}
	var missing []string
	for row := range acked {
		if !present[row] {
			missing = append(missing, row)
		}
	}
	if len(missing) > 0 {
		if len(missing) > 10 {
			missing = missing[:10]
		}
		t.Fatalf("round %d: acknowledged writes lost after kill -9, e.g. %v", round, missing)
	}
	// A point read of an acknowledged row goes through the bloom filters.
	for row := range acked {
		cs, err := tb.ReadRow(bg, []byte(row), nil)
		if err != nil || len(cs) != 2 {
			t.Fatalf("round %d: ReadRow(%s) = %s, %v; want its 2 cells", round, row, render(cs), err)
		}
		break
	}
	if t.Failed() {
		t.FailNow()
	}
	return len(present)
}
