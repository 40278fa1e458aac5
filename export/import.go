package export

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/families"
)

// importBatchBytes bounds the encoded size of one ApplyBulk call, well under
// gRPC's default 4 MiB message limit, whatever the batch's row count.
const importBatchBytes = 2 << 20

// Source is one file to import.
type Source struct {
	Name string
	Open func(context.Context) (io.ReadCloser, error)
}

// LocationSources lists the files of an export in loc: the manifest's, or
// else every *.jsonl, *.parquet and *.avro file in name order. header is
// the manifest's header, or nil.
func LocationSources(ctx context.Context, loc Location) (srcs []Source, header []byte, err error) {
	m, ok, err := ReadManifest(ctx, loc)
	if err != nil {
		return nil, nil, err
	}
	var names []string
	if ok {
		for _, f := range m.Files {
			names = append(names, f.Name)
		}
		header = m.Header
	} else {
		all, err := loc.List(ctx)
		if err != nil {
			return nil, nil, err
		}
		for _, n := range all {
			for _, f := range Formats {
				if strings.HasSuffix(n, f.Ext()) {
					names = append(names, n)
				}
			}
		}
		if len(names) == 0 {
			return nil, nil, fmt.Errorf("%s holds no %s and no .jsonl, .parquet or .avro file; give the directory or prefix an export wrote", loc, ManifestName)
		}
	}
	for _, n := range names {
		srcs = append(srcs, Source{Name: n, Open: func(ctx context.Context) (io.ReadCloser, error) { return loc.Open(ctx, n) }})
	}
	return srcs, header, nil
}

// ImportOptions say how to import.
type ImportOptions struct {
	// Table is the table written to.
	Table string
	// Create creates the table from the export's header when it is
	// missing (families with their settings, split points).
	Create bool
	// Workers is how many batches are written at once and how many files
	// read at once; 0 means 1.
	Workers int
	// BatchRows is the most rows per ApplyBulk call (0: 500); a call is
	// also kept under 2 MiB.
	BatchRows int
	// State, when set, is a local file that records each file finished,
	// so that a rerun skips them (resume after a kill or a failure).
	State string
	// Progress, when set, is called after each batch with what it wrote
	// (bytes: the cells' sizes).
	Progress func(rows, cells, bytes int64)
	// FileDone, when set, is called after a file is finished and
	// recorded, in the goroutine that read it.
	FileDone func(name string)
	// Bulk loads each file with client.Table.BulkLoad (new SSTables of
	// the tablets, no commit log or memtable; docs/OPERATIONS.md "Bulk
	// load") instead of writing its rows: each file's rows must be in
	// ascending key order (an export's are) and in bytes families.
	// BatchRows does not apply; Workers files load at once.
	Bulk bool
}

// ImportStats say what an import did.
type ImportStats struct {
	Stats
	Files, Skipped int
	Created        bool
}

// ErrNoTable is the error of an import into a missing table without
// Create.
var ErrNoTable = errors.New("table does not exist")

// Import writes the rows of srcs to opts.Table: each row (up to
// cell.MaxMutationsPerRow cells and 2 MiB; wider rows go in several) is
// one atomic mutation with the timestamps of the file, so a rerun writes
// the same cells again; batches of whole rows go to opts.Workers writers.
// header (may be nil: the first file's is used) is what Create creates
// the table from. A missing table fails before any row is read.
func Import(ctx context.Context, cli *client.Client, srcs []Source, header []byte, opts ImportOptions) (ImportStats, error) {
	var st ImportStats
	done, err := readState(opts.State)
	if err != nil {
		return st, err
	}
	fams, err := prepareTable(ctx, cli, srcs, header, opts, &st)
	if err != nil {
		return st, err
	}
	var todo []Source
	for _, s := range srcs {
		if done[s.Name] {
			st.Skipped++
			continue
		}
		todo = append(todo, s)
	}
	im := &importer{tbl: cli.Open(opts.Table), opts: opts, batches: make(chan *batch, max(opts.Workers, 1)), aggregate: map[string]bool{}}
	for _, f := range fams {
		if f.ValueType.IsAggregate() {
			im.aggregate[f.Name] = true
		}
	}
	if im.opts.BatchRows <= 0 {
		im.opts.BatchRows = 500
	}
	workers := max(opts.Workers, 1)
	ctx, im.cancel = context.WithCancel(ctx)
	defer im.cancel()
	var state *os.File
	if opts.State != "" {
		if state, err = os.OpenFile(opts.State, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err != nil {
			return st, fmt.Errorf("opening the state file: %w", err)
		}
		defer state.Close()
	}
	var senders sync.WaitGroup
	for range workers {
		senders.Add(1)
		go func() { defer senders.Done(); im.send(ctx) }()
	}
	var readers sync.WaitGroup
	var next atomic.Int64
	var stateMu sync.Mutex
	for range min(workers, len(todo)) {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(todo) || ctx.Err() != nil {
					return
				}
				if err := im.file(ctx, todo[i]); err != nil {
					im.fail(err)
					return
				}
				if state != nil {
					stateMu.Lock()
					_, err := state.WriteString(todo[i].Name + "\n")
					if err == nil {
						err = state.Sync()
					}
					stateMu.Unlock()
					if err != nil {
						im.fail(fmt.Errorf("recording %s in the state file: %w", todo[i].Name, err))
						return
					}
				}
				im.files.Add(1)
				if opts.FileDone != nil {
					opts.FileDone(todo[i].Name)
				}
			}
		}()
	}
	readers.Wait()
	close(im.batches)
	senders.Wait()
	st.Rows, st.Cells, st.Bytes = im.rows.Load(), im.cells.Load(), im.bytes.Load()
	st.Files = int(im.files.Load())
	if im.err != nil {
		return st, im.err
	}
	return st, ctx.Err()
}

// readState reads the names of the files a state file records.
func readState(path string) (map[string]bool, error) {
	done := map[string]bool{}
	if path == "" {
		return done, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return done, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the state file: %w", err)
	}
	// A line cut by a kill has no newline: that file was not recorded.
	lines := bytes.Split(b, []byte("\n"))
	for _, l := range lines[:len(lines)-1] {
		done[string(l)] = true
	}
	return done, nil
}

// prepareTable checks that the table exists, or creates it from the
// header, and returns its families.
func prepareTable(ctx context.Context, cli *client.Client, srcs []Source, header []byte, opts ImportOptions, st *ImportStats) ([]families.Family, error) {
	info, err := cli.Admin().DescribeTable(ctx, opts.Table)
	if err == nil {
		return info.Families, nil
	}
	if status.Code(err) != codes.NotFound {
		return nil, fmt.Errorf("checking table %s: %w", opts.Table, err)
	}
	if !opts.Create {
		return nil, fmt.Errorf("%w: %s; rerun the import with --create to create it from the export's header (families, splits), or create it with `tabula table create`", ErrNoTable, opts.Table)
	}
	if header == nil && len(srcs) > 0 {
		if header, err = fileHeader(ctx, srcs[0]); err != nil {
			return nil, err
		}
	}
	if header == nil {
		return nil, fmt.Errorf("%w: %s, and the input has no header to create it from (an export of an earlier release); create it with `tabula table create`", ErrNoTable, opts.Table)
	}
	h, err := DecodeHeader(header)
	if err != nil {
		return nil, err
	}
	info = client.TableInfo{Name: opts.Table, Families: h.Families, SplitThreshold: h.SplitThreshold}
	if err := cli.Admin().CreateTableWithInfo(ctx, info, h.Splits); err != nil {
		return nil, fmt.Errorf("creating %s from the export's header: %w", opts.Table, err)
	}
	st.Created = true
	return h.Families, nil
}

func fileHeader(ctx context.Context, s Source) ([]byte, error) {
	fr, err := openFile(ctx, s)
	if err != nil {
		return nil, err
	}
	defer fr.Close()
	return fr.header, nil
}

// importer runs the batches of an import.
type importer struct {
	tbl     *client.Table
	opts    ImportOptions
	batches chan *batch
	cancel  context.CancelFunc
	// aggregate are the table's aggregate families.
	aggregate map[string]bool

	rows, cells, bytes, files atomic.Int64

	errOnce sync.Once
	err     error
}

func (im *importer) fail(err error) {
	im.errOnce.Do(func() { im.err = err; im.cancel() })
}

// batch is whole rows of one file, and the file's count of batches in
// flight.
type batch struct {
	keys   [][]byte
	muts   []*client.Mutation
	lines  []int  // where each row starts in the file, in units of unit
	unit   string // "line" (JSON lines) or "row"
	cells  int
	size   int
	name   string
	inFile *sync.WaitGroup
}

// file reads one file into batches and waits for them to be written.
func (im *importer) file(ctx context.Context, s Source) error {
	jr, err := openFile(ctx, s)
	if err != nil {
		return err
	}
	defer jr.Close()
	if im.opts.Bulk {
		return im.bulkFile(ctx, s.Name, jr)
	}
	unit, _ := jr.pos()
	var inFile sync.WaitGroup
	b := &batch{name: s.Name, unit: unit, inFile: &inFile}
	send := func() bool {
		if len(b.keys) == 0 {
			return true
		}
		inFile.Add(1)
		select {
		case im.batches <- b:
		case <-ctx.Done():
			inFile.Done()
			return false
		}
		b = &batch{name: s.Name, unit: unit, inFile: &inFile}
		return true
	}
	var rerr error
	for {
		row, err := jr.ReadRow()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			rerr = fmt.Errorf("%w (its batch was not written)", err)
			break
		}
		if jr.jr == nil {
			row = ownRow(row)
		}
		// A row wider than one request allows (cell.MaxMutationsPerRow,
		// or a batch's bytes) goes in several requests: each is atomic,
		// and importing again is idempotent (explicit timestamps).
		for start := 0; start < len(row.Cells); {
			m, n, size := client.NewMutation(), 0, 0
			for ; start < len(row.Cells) && n < cell.MaxMutationsPerRow && (n == 0 || size < importBatchBytes); start++ {
				c := row.Cells[start]
				if im.aggregate[c.Family] {
					// An aggregate's exported value is its merged state:
					// merged into the cell at its timestamp (SetCell is
					// refused there). min and max merge idempotently; sum
					// adds again when a row is imported twice.
					m.MergeToCell(c.Family, c.Qualifier, c.Timestamp, c.Value)
				} else {
					m.Set(c.Family, c.Qualifier, c.Timestamp, c.Value)
				}
				n++
				size += len(c.Family) + len(c.Qualifier) + len(c.Value) + 16
			}
			if len(b.keys) > 0 && b.size+size > importBatchBytes {
				if !send() {
					return ctx.Err()
				}
			}
			_, at := jr.pos()
			b.keys, b.muts, b.lines = append(b.keys, row.Key), append(b.muts, m), append(b.lines, at)
			b.cells += n
			b.size += size + len(row.Key)
		}
		if len(b.keys) >= im.opts.BatchRows && !send() {
			return ctx.Err()
		}
	}
	if rerr == nil && !send() {
		return ctx.Err()
	}
	inFile.Wait()
	if rerr != nil {
		return rerr
	}
	return ctx.Err()
}

// ownRow copies a row's byte strings into one new allocation. A Parquet or
// Avro reader returns slices of buffers it reuses (RowReader's contract),
// and a batch holds its rows' bytes until it is written, after the next
// rows are read; the JSON-lines reader decodes every row into new slices.
func ownRow(r Row) Row {
	n := len(r.Key)
	for _, c := range r.Cells {
		n += len(c.Qualifier) + len(c.Value)
	}
	buf := make([]byte, 0, n)
	take := func(b []byte) []byte {
		buf = append(buf, b...)
		return buf[len(buf)-len(b) : len(buf) : len(buf)]
	}
	out := Row{Key: take(r.Key), Cells: make([]Cell, len(r.Cells))}
	for i, c := range r.Cells {
		out.Cells[i] = Cell{Family: c.Family, Qualifier: take(c.Qualifier), Timestamp: c.Timestamp, Value: take(c.Value)}
	}
	return out
}

// send writes batches until there are no more.
func (im *importer) send(ctx context.Context) {
	for b := range im.batches {
		if ctx.Err() == nil {
			if err := im.write(ctx, b); err != nil {
				im.fail(err)
			}
		}
		b.inFile.Done()
	}
}

func (im *importer) write(ctx context.Context, b *batch) error {
	errs, err := im.tbl.ApplyBulk(ctx, b.keys, b.muts)
	if ctx.Err() != nil {
		return ctx.Err() // cancelled (killed, or another batch failed): not this batch's fault
	}
	var first error
	failed := 0
	for i, e := range errs {
		if e == nil {
			continue
		}
		failed++
		if first == nil {
			first = fmt.Errorf("importing into %s: %s: row %q starting at %s %d: %w", im.tbl.Name(), b.name, b.keys[i], b.unit, b.lines[i], e)
		}
	}
	if err != nil && first == nil {
		first = fmt.Errorf("importing into %s: %s: batch starting at %s %d: %w", im.tbl.Name(), b.name, b.unit, b.lines[0], err)
	}
	if first != nil {
		if failed > 1 {
			first = fmt.Errorf("%d rows of the batch failed (rows of other batches may be written; rerunning the import is safe); first: %w", failed, first)
		}
		return first
	}
	im.rows.Add(int64(len(b.keys)))
	im.cells.Add(int64(b.cells))
	im.bytes.Add(int64(b.size))
	if im.opts.Progress != nil {
		im.opts.Progress(int64(len(b.keys)), int64(b.cells), int64(b.size))
	}
	return nil
}

// isNotExist reports a missing file of a Location.
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// StreamSource is a Source reading r once (stdin): it reads the header now
// (returned, or nil), so that it is known before the import starts. A
// Parquet stream is copied to an unlinked temporary file first (its index
// is at its end).
func StreamSource(name string, r io.Reader) (Source, []byte, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	magic, err := br.Peek(4)
	if err != nil && !errors.Is(err, io.EOF) {
		return Source{}, nil, fmt.Errorf("reading %s: %w", name, err)
	}
	var replay io.ReadCloser
	switch sniff(magic) {
	case Parquet:
		tmp, err := spool(br)
		if err != nil {
			return Source{}, nil, fmt.Errorf("copying %s to a temporary file: %w", name, err)
		}
		replay = tmp
	case Avro:
		// The header is read through a copy of what the reader consumed,
		// which is read again first.
		var seen bytes.Buffer
		if _, _, err := NewAvroReader(io.TeeReader(br, &seen)); err != nil {
			return Source{}, nil, fmt.Errorf("%w: %s: %v", ErrBadInput, name, err)
		}
		replay = io.NopCloser(io.MultiReader(&seen, br))
	}
	if replay != nil {
		fr, err := readerOf(replay, name)
		if err != nil {
			return Source{}, nil, err
		}
		opened := false
		return Source{Name: name, Open: func(context.Context) (io.ReadCloser, error) {
			if opened {
				return nil, fmt.Errorf("%s can be read once", name)
			}
			opened = true
			return preOpened{fr}, nil
		}}, fr.header, nil
	}
	first, err := br.ReadBytes('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return Source{}, nil, fmt.Errorf("reading %s: %w", name, err)
	}
	var header []byte
	if isHeaderLine(first) {
		header = bytes.TrimSpace(first)
	}
	opened := false
	return Source{Name: name, Open: func(context.Context) (io.ReadCloser, error) {
		if opened {
			return nil, fmt.Errorf("%s can be read once", name)
		}
		opened = true
		return io.NopCloser(io.MultiReader(bytes.NewReader(first), br)), nil
	}}, header, nil
}

// FileSource is a Source reading a local file.
func FileSource(path string) Source {
	return Source{Name: path, Open: func(context.Context) (io.ReadCloser, error) { return os.Open(path) }}
}
