package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/client"
)

// Export and import move whole tables (or row ranges) as JSON lines: one
// cell per line, every version, in read order, in exactly the format of
// `--output json` (see printer). Import writes every cell with the
// timestamp of its line, so a rerun of an import (after a failure) writes
// the same cells again and changes nothing that was already imported.

// errBadInput marks an import line that is not a cell in export's format.
var errBadInput = errors.New("malformed import input")

// importBatchBytes bounds the encoded size of one ApplyBulk call, well under
// gRPC's default 4 MiB message limit, whatever --batch says.
const importBatchBytes = 2 << 20

func newExportCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "export TABLE [--start ROW] [--end ROW] [--prefix P] [--columns ...] [--file PATH]",
		Short: "Write every cell (all versions) of a table as JSON lines",
		Long: `Write every cell of the rows in [--start, --end) (or with --prefix), all versions,
in read order, one JSON object per line in the format of --output json.
"tabula import" reads it back. Progress goes to stderr every second when stderr
is a terminal or --progress is given; a summary line goes to stderr at the end.`,
		Example: "  tabula export users --file users.jsonl\n  tabula export users --prefix a --columns profile > a.jsonl",
		Args:    cobra.ExactArgs(1),
		RunE:    runExport,
	}
	c.Flags().String("start", "", "first row (inclusive; default: the first row)")
	c.Flags().String("end", "", "end row (exclusive; default: past the last row)")
	c.Flags().String("prefix", "", "only rows starting with this prefix (not with --start/--end)")
	c.Flags().StringSlice("columns", nil, "only these columns: FAMILY or FAMILY:QUALIFIER, comma-separated")
	c.Flags().String("file", "", "write to this file (default: stdout)")
	c.Flags().Bool("progress", false, "print progress to stderr every second even when it is not a terminal")
	return c
}

func runExport(cmd *cobra.Command, args []string) (err error) {
	table := args[0]
	items, _ := cmd.Flags().GetStringSlice("columns")
	cols, err := parseColumns(items, false)
	if err != nil {
		return err
	}
	f, err := readSpec{cols: cols}.filter()
	if err != nil {
		return err
	}
	var opts []client.ReadOption
	if f != nil {
		opts = append(opts, client.WithFilter(f))
	}
	rs, err := scanRowSet(cmd)
	if err != nil {
		return err
	}
	s, err := connectLong(cmd)
	if err != nil {
		return err
	}
	defer s.close()

	out := cmd.OutOrStdout()
	if path, _ := cmd.Flags().GetString("file"); path != "" {
		file, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("creating export file: %w", err)
		}
		defer func() {
			if cerr := file.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("closing export file: %w", cerr)
			}
		}()
		out = file
	}
	cw := &countingWriter{w: out}
	bw := bufio.NewWriterSize(cw, 256<<10)
	p := &printer{w: bw, json: true}

	prog := startProgress(cmd, "export")
	defer func() { prog.finish("exported", err) }()
	// Each row is written out before the next is read.
	opts = append(opts, client.ReuseRows())
	it := s.cli.Open(table).ReadRows(s.ctx, rs, opts...)
	defer it.Close()
	for it.Next() {
		cells := it.Row().Cells
		if err := p.cells(cells); err != nil {
			return fmt.Errorf("writing export: %w", err)
		}
		prog.add(1, int64(len(cells)), 0)
		prog.bytes.Store(cw.n.Load())
	}
	if err := it.Err(); err != nil {
		return wrapf(err, "exporting %s", table)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing export: %w", err)
	}
	prog.bytes.Store(cw.n.Load())
	return nil
}

func newImportCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "import TABLE [--file PATH] [--batch N]",
		Short: "Write the cells of JSON lines (as made by export) to a table",
		Long: `Read JSON lines in the format of "tabula export" (and --output json) and write
their cells, each with the timestamp of its line. Consecutive lines of the same
row become one atomic row mutation; rows are sent in batches of --batch rows.
Because every timestamp is explicit, an import that failed part way can be
rerun: rows already written are written again unchanged.
The first malformed line or failed batch stops the import with an error
naming the line; rows of earlier batches stay written, no row is half-written.`,
		Example: "  tabula import users2 --file users.jsonl\n  tabula export users | tabula import users2",
		Args:    cobra.ExactArgs(1),
		RunE:    runImport,
	}
	c.Flags().String("file", "", "read from this file (default: stdin)")
	c.Flags().Int("batch", 500, "rows per ApplyBulk call")
	c.Flags().Bool("progress", false, "print progress to stderr every second even when it is not a terminal")
	return c
}

// importRow is one row mutation being gathered, with the line it started on.
type importRow struct {
	key   []byte
	line  int
	mut   *client.Mutation
	cells int
	size  int
}

func runImport(cmd *cobra.Command, args []string) (err error) {
	table := args[0]
	batch, _ := cmd.Flags().GetInt("batch")
	if batch < 1 {
		return cell.Invalidf("--batch %d is not positive; give the number of rows per write, e.g. 500", batch)
	}
	in, name := cmd.InOrStdin(), "stdin"
	if path, _ := cmd.Flags().GetString("file"); path != "" {
		name = path
		file, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("opening import file: %w", err)
		}
		defer file.Close()
		in = file
	}
	s, err := connectLong(cmd)
	if err != nil {
		return err
	}
	defer s.close()
	tab := s.cli.Open(table)

	prog := startProgress(cmd, "import")
	defer func() { prog.finish("imported", err) }()

	var (
		pending   []*importRow
		pendBytes int
		cur       *importRow
	)
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		rows := make([][]byte, len(pending))
		muts := make([]*client.Mutation, len(pending))
		for i, r := range pending {
			rows[i], muts[i] = r.key, r.mut
		}
		errs, err := tab.ApplyBulk(s.ctx, rows, muts)
		var first error
		var failed int
		for i, e := range errs {
			if e == nil {
				prog.add(1, int64(pending[i].cells), 0)
				continue
			}
			failed++
			if first == nil {
				first = fmt.Errorf("importing into %s: row %s starting at line %d: %w", table, display(pending[i].key), pending[i].line, e)
			} else {
				fmt.Fprintf(cmd.ErrOrStderr(), "import: row %s starting at line %d failed: %v\n", display(pending[i].key), pending[i].line, e)
			}
		}
		if err != nil && first == nil {
			first = wrapf(err, "importing into %s: batch starting at line %d", table, pending[0].line)
		}
		if first != nil {
			if failed > 1 {
				first = fmt.Errorf("%d rows of the batch failed (rows of earlier batches are written; rerunning the import is safe); first: %w", failed, first)
			}
			return first
		}
		pending, pendBytes = pending[:0], 0
		return nil
	}
	// closeRow moves the current row into the batch, sending the batch
	// when it is full.
	closeRow := func() error {
		if cur == nil {
			return nil
		}
		pending = append(pending, cur)
		pendBytes += cur.size
		cur = nil
		if len(pending) >= batch || pendBytes >= importBatchBytes {
			return flush()
		}
		return nil
	}

	br := bufio.NewReaderSize(in, 256<<10)
	for lineNo := 1; ; lineNo++ {
		line, rerr := br.ReadBytes('\n')
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return fmt.Errorf("reading import input at line %d: %w", lineNo, rerr)
		}
		prog.bytes.Add(int64(len(line)))
		if len(bytes.TrimSpace(line)) > 0 {
			c, err := decodeCellLine(line)
			if err != nil {
				return fmt.Errorf("%w: %s line %d: %v (its batch was not written)", errBadInput, name, lineNo, err)
			}
			// A row wider than one request allows (cell.MaxMutationsPerRow,
			// or a batch's bytes) goes in several requests: each is atomic,
			// and re-importing is idempotent (explicit timestamps).
			if cur == nil || !bytes.Equal(cur.key, c.Row) || cur.cells >= cell.MaxMutationsPerRow || cur.size >= importBatchBytes {
				if err := closeRow(); err != nil {
					return err
				}
				cur = &importRow{key: c.Row, line: lineNo, mut: client.NewMutation()}
			}
			cur.mut.Set(c.Family, c.Qualifier, c.Timestamp, c.Value)
			cur.cells++
			cur.size += len(c.Family) + len(c.Qualifier) + len(c.Value) + 16
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
	}
	if err := closeRow(); err != nil {
		return err
	}
	return flush()
}

// jsonCell is one line of export: the JSON object printer.cells writes.
// Pointers tell a missing field from an empty one.
type jsonCell struct {
	Row               *string `json:"row"`
	RowEncoding       string  `json:"row_encoding"`
	Family            *string `json:"family"`
	Qualifier         *string `json:"qualifier"`
	QualifierEncoding string  `json:"qualifier_encoding"`
	Timestamp         *int64  `json:"timestamp"`
	Value             *string `json:"value"`
	ValueEncoding     string  `json:"value_encoding"`
}

// decodeCellLine parses one line of export into a cell with an explicit
// timestamp, checking every field; the error says what is wrong.
func decodeCellLine(line []byte) (cell.Cell, error) {
	if err := checkUniqueKeys(line); err != nil {
		return cell.Cell{}, err
	}
	var j jsonCell
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return cell.Cell{}, fmt.Errorf("not a JSON cell object: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return cell.Cell{}, errors.New("text after the JSON object; write one object per line")
	}
	var c cell.Cell
	var err error
	if c.Row, err = fieldBytes("row", j.Row, j.RowEncoding); err != nil {
		return cell.Cell{}, err
	}
	if err := cell.ValidateRow(c.Row); err != nil {
		return cell.Cell{}, err
	}
	if j.Family == nil {
		return cell.Cell{}, errors.New(`field "family" is missing`)
	}
	c.Family = *j.Family
	if err := cell.ValidateFamilyName(c.Family); err != nil {
		return cell.Cell{}, fmt.Errorf("family %q must be 1 to 64 characters of A-Z a-z 0-9 _ . -", c.Family)
	}
	if c.Qualifier, err = fieldBytes("qualifier", j.Qualifier, j.QualifierEncoding); err != nil {
		return cell.Cell{}, err
	}
	if err := cell.ValidateQualifier(c.Qualifier); err != nil {
		return cell.Cell{}, err
	}
	if j.Timestamp == nil {
		return cell.Cell{}, errors.New(`field "timestamp" is missing`)
	}
	if c.Timestamp = *j.Timestamp; c.Timestamp < 0 {
		return cell.Cell{}, fmt.Errorf("timestamp %d is negative; give microseconds since the Unix epoch", c.Timestamp)
	}
	if c.Value, err = fieldBytes("value", j.Value, j.ValueEncoding); err != nil {
		return cell.Cell{}, err
	}
	if len(c.Value) > cell.MaxValueLen {
		return cell.Cell{}, fmt.Errorf("value of %d bytes is larger than %d", len(c.Value), cell.MaxValueLen)
	}
	return c, nil
}

// fieldBytes decodes a byte-string field: plain text, or base64 when its
// _encoding field says so.
func fieldBytes(name string, v *string, encoding string) ([]byte, error) {
	if v == nil {
		return nil, fmt.Errorf("field %q is missing", name)
	}
	switch encoding {
	case "":
		return []byte(*v), nil
	case "base64":
		b, err := base64.StdEncoding.Strict().DecodeString(*v)
		if err != nil {
			return nil, fmt.Errorf("field %q is not valid standard base64: %v", name, err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("field %q has %s_encoding %q; the only encoding is \"base64\"", name, name, encoding)
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// progress counts rows, cells and bytes of an export or import and, when
// stderr is a terminal or --progress is given, prints them every second
// from a goroutine that stop ends and waits for.
type progress struct {
	verb  string
	w     io.Writer
	begin time.Time

	rows, cells, bytes atomic.Int64

	done     chan struct{}
	wg       sync.WaitGroup
	stopOnce sync.Once
}

func startProgress(cmd *cobra.Command, verb string) *progress {
	p := &progress{verb: verb, w: cmd.ErrOrStderr(), begin: time.Now(), done: make(chan struct{})}
	show, _ := cmd.Flags().GetBool("progress")
	if !show {
		if f, ok := p.w.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
				show = true
			}
		}
	}
	if show {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-p.done:
					return
				case <-t.C:
					fmt.Fprintf(p.w, "%s: %s\n", p.verb, p.line())
				}
			}
		}()
	}
	return p
}

func (p *progress) add(rows, cells, bytes int64) {
	p.rows.Add(rows)
	p.cells.Add(cells)
	p.bytes.Add(bytes)
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

// finish stops the progress lines and prints the summary line; after a
// failure it says what was done before it.
func (p *progress) finish(what string, err error) {
	p.stop()
	if err != nil {
		fmt.Fprintf(p.w, "%s failed after %s\n", p.verb, p.line())
		return
	}
	fmt.Fprintf(p.w, "%s %s\n", what, p.line())
}

// checkUniqueKeys refuses a JSON object that names a field twice:
// encoding/json would silently keep the last, so `{"value":"a","value":"b"}`
// would import "b" without a word.
func checkUniqueKeys(line []byte) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil // not an object: the full decode says what is wrong
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		key, ok := t.(string)
		if !ok {
			return nil
		}
		if seen[key] {
			return fmt.Errorf("field %q appears twice; give each field once", key)
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil
		}
	}
	return nil
}
