package export

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/rowfilter"
)

// ManifestName is the manifest file of a parallel export.
const ManifestName = "manifest.json"

// ExportOptions say what an export reads.
type ExportOptions struct {
	// Table is the table to export.
	Table string
	// Start and End bound the rows, [Start, End); nil is unbounded.
	Start, End []byte
	// Filter, when not nil, narrows the cells (columns); the export
	// chains it after the as-of cut.
	Filter *rowfilter.Filter
	// AsOf is the cut: cells with a timestamp <= AsOf, in microseconds.
	// 0 means the time the export starts.
	AsOf int64
	// Workers is how many files a parallel export writes at once, one
	// per key range of similar size; 0 means 1.
	Workers int
	// Progress, when set, is called after each row with what it added.
	Progress func(rows, cells, bytes int64)
	// At, when set, is told how far each key range is: with the last key
	// written every atEvery rows, and with key nil once the range is
	// written whole. Workers call it at once; its keys are its own.
	At func(rangeStart, rangeEnd, key []byte)
	// Format is the files' format ("": JSONLines).
	Format Format
}

// Stats count what one file (or one export) holds.
type Stats struct {
	Rows  int64 `json:"rows"`
	Cells int64 `json:"cells"`
	Bytes int64 `json:"bytes"`
}

func (s *Stats) add(o Stats) { s.Rows += o.Rows; s.Cells += o.Cells; s.Bytes += o.Bytes }

// Manifest lists the files of a parallel export: the ranges they hold,
// what each holds, and the export's header.
type Manifest struct {
	Format int             `json:"tabula_export_manifest"`
	Header json.RawMessage `json:"header"`
	Files  []ManifestFile  `json:"files"`
}

// ManifestFile is one file of a parallel export and the rows
// [Start, End) it holds (End empty: the end of the table).
type ManifestFile struct {
	Name  string `json:"name"`
	Start []byte `json:"start"`
	End   []byte `json:"end,omitempty"`
	Stats
}

// ReadHeader returns the header of an export of table: its schema now,
// its tablet boundaries, and the cut and range given.
func ReadHeader(ctx context.Context, cli *client.Client, table string, asOf int64, start, end []byte) (Header, error) {
	info, err := cli.Admin().DescribeTable(ctx, table)
	if err != nil {
		return Header{}, fmt.Errorf("reading the schema of %s: %w", table, err)
	}
	h := Header{Table: info.Name, AsOf: asOf, Start: start, End: end, Families: info.Families, SplitThreshold: info.SplitThreshold}
	for _, t := range info.Tablets {
		if len(t.Start) > 0 {
			h.Splits = append(h.Splits, t.Start)
		}
	}
	return h, nil
}

// Cut returns the read filter of an export as of asOf: cells with a
// timestamp <= asOf, then filter (may be nil).
func Cut(asOf int64, filter *rowfilter.Filter) *rowfilter.Filter {
	f := rowfilter.TimestampRange(0, asOf+1)
	if filter != nil {
		f = rowfilter.Chain(f, filter)
	}
	return f
}

// AsOfNow is the default cut: the current time in microseconds.
func AsOfNow() int64 { return time.Now().UnixMicro() }

// atEvery is how many rows WriteRange writes between two calls of its at.
const atEvery = 1024

// WriteRange reads the rows of [start, end) of tbl through filter (Cut's)
// and writes them to w, in key order; progress (may be nil) is called per
// row, and at (may be nil) with a copy of the last key written every
// atEvery rows, so that a caller can tell how far the range is. It does
// not close w.
func WriteRange(ctx context.Context, tbl *client.Table, start, end []byte, filter *rowfilter.Filter, w RowWriter, progress func(rows, cells, bytes int64), at func(key []byte)) (Stats, error) {
	var st Stats
	// Each row is written before the next is read.
	it := tbl.ReadRows(ctx, client.NewRange(start, end), client.WithFilter(filter), client.ReuseRows())
	defer it.Close()
	var r Row
	for it.Next() {
		row := it.Row()
		r.Key, r.Cells = row.Key, r.Cells[:0]
		var size int64
		for _, c := range row.Cells {
			r.Cells = append(r.Cells, Cell{Family: c.Family, Qualifier: c.Qualifier, Timestamp: c.Timestamp, Value: c.Value})
			size += int64(len(c.Family) + len(c.Qualifier) + len(c.Value) + 8)
		}
		if err := w.WriteRow(r); err != nil {
			return st, fmt.Errorf("writing export: %w", err)
		}
		st.Rows++
		st.Cells += int64(len(r.Cells))
		st.Bytes += size + int64(len(r.Key))
		if progress != nil {
			progress(1, int64(len(r.Cells)), size+int64(len(r.Key)))
		}
		if at != nil && st.Rows%atEvery == 0 {
			at(bytes.Clone(r.Key))
		}
	}
	if err := it.Err(); err != nil {
		return st, fmt.Errorf("exporting %s: %w", tbl.Name(), err)
	}
	return st, nil
}

// SplitRange cuts [start, end) into at most n ranges of about equal size,
// at keys of samples (SampleRowKeys: keys with the table's cumulative size
// before them). Fewer samples than n give fewer ranges.
func SplitRange(samples []client.KeySample, start, end []byte, n int) [][2][]byte {
	var in []client.KeySample
	for _, s := range samples {
		if len(s.Key) > 0 && bytes.Compare(s.Key, start) > 0 && (end == nil || bytes.Compare(s.Key, end) < 0) {
			in = append(in, s)
		}
	}
	out := [][2][]byte{}
	lo := start
	if n > 1 && len(in) > 0 {
		base := int64(0)
		for _, s := range samples {
			if bytes.Compare(s.Key, start) <= 0 {
				base = s.OffsetBytes
			}
		}
		total := in[len(in)-1].OffsetBytes - base
		// The size after the last sample inside is unknown: count it as one
		// more sample's share.
		total += total / int64(len(in))
		next := 1
		for _, s := range in {
			if next >= n {
				break
			}
			if s.OffsetBytes-base >= total*int64(next)/int64(n) && bytes.Compare(s.Key, lo) > 0 {
				out = append(out, [2][]byte{lo, s.Key})
				lo = s.Key
				next++
			}
		}
	}
	return append(out, [2][]byte{lo, end})
}

// FileName is the name of file i of a parallel export in format f.
func FileName(i int, f Format) string { return fmt.Sprintf("part-%05d%s", i, f.Ext()) }

// Export writes the rows of opts to loc as opts.Workers files in
// opts.Format of key ranges of similar size (SplitRange of the table's
// SampleRowKeys), each with the header, then the manifest listing them.
// The files together hold what one export of the range holds.
func Export(ctx context.Context, cli *client.Client, loc Location, opts ExportOptions) (Manifest, error) {
	if opts.AsOf == 0 {
		opts.AsOf = AsOfNow()
	}
	workers := max(opts.Workers, 1)
	h, err := ReadHeader(ctx, cli, opts.Table, opts.AsOf, opts.Start, opts.End)
	if err != nil {
		return Manifest{}, err
	}
	hb, err := EncodeHeader(h)
	if err != nil {
		return Manifest{}, err
	}
	tbl := cli.Open(opts.Table)
	ranges := [][2][]byte{{opts.Start, opts.End}}
	if workers > 1 {
		samples, err := tbl.SampleRowKeys(ctx)
		if err != nil {
			return Manifest{}, fmt.Errorf("sampling %s's keys: %w", opts.Table, err)
		}
		ranges = SplitRange(samples, opts.Start, opts.End, workers)
		if len(ranges) < workers && len(h.Splits) > 0 {
			// Samples come from SSTables: a table still in its memtables
			// has none. Its tablet boundaries, counted as equal sizes,
			// still cut the work.
			byTablet := make([]client.KeySample, len(h.Splits))
			for i, k := range h.Splits {
				byTablet[i] = client.KeySample{Key: k, OffsetBytes: int64(i + 1)}
			}
			if alt := SplitRange(byTablet, opts.Start, opts.End, workers); len(alt) > len(ranges) {
				ranges = alt
			}
		}
	}
	m := Manifest{Format: FormatVersion, Header: hb, Files: make([]ManifestFile, len(ranges))}
	for i, r := range ranges {
		m.Files[i] = ManifestFile{Name: FileName(i, opts.Format), Start: r[0], End: r[1]}
		if m.Files[i].Start == nil {
			m.Files[i].Start = []byte{}
		}
	}
	filter := Cut(opts.AsOf, opts.Filter)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		next  atomic.Int64
		errMu sync.Mutex
		first error
	)
	for range min(workers, len(ranges)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(ranges) || ctx.Err() != nil {
					return
				}
				var at func([]byte)
				if opts.At != nil {
					at = func(key []byte) { opts.At(ranges[i][0], ranges[i][1], key) }
				}
				st, err := exportFile(ctx, tbl, loc, opts.Format, m.Files[i].Name, hb, ranges[i], filter, opts.Progress, at)
				if err != nil {
					errMu.Lock()
					if first == nil {
						first = err
					}
					errMu.Unlock()
					cancel()
					return
				}
				m.Files[i].Stats = st
				if opts.At != nil {
					opts.At(ranges[i][0], ranges[i][1], nil)
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return m, first
	}
	mb, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return m, err
	}
	w, err := loc.Create(ctx, ManifestName)
	if err != nil {
		return m, fmt.Errorf("writing the manifest: %w", err)
	}
	if _, err := w.Write(append(mb, '\n')); err != nil {
		w.Close()
		return m, fmt.Errorf("writing the manifest: %w", err)
	}
	if err := w.Close(); err != nil {
		return m, fmt.Errorf("writing the manifest: %w", err)
	}
	return m, nil
}

func exportFile(ctx context.Context, tbl *client.Table, loc Location, format Format, name string, header []byte, r [2][]byte, filter *rowfilter.Filter, progress func(rows, cells, bytes int64), at func([]byte)) (Stats, error) {
	f, err := loc.Create(ctx, name)
	if err != nil {
		return Stats{}, fmt.Errorf("creating %s in %s: %w (export to an empty directory or prefix)", name, loc, err)
	}
	jw, err := NewWriter(format, f, FileOptions{Header: header})
	if err == nil {
		var st Stats
		st, err = WriteRange(ctx, tbl, r[0], r[1], filter, jw, progress, at)
		if err == nil {
			err = jw.Close()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return st, fmt.Errorf("%s: %w", name, err)
		}
		return st, nil
	}
	f.Close()
	return Stats{}, err
}

// ReadManifest reads loc's manifest; ok is false when there is none.
func ReadManifest(ctx context.Context, loc Location) (m Manifest, ok bool, err error) {
	r, err := loc.Open(ctx, ManifestName)
	if err != nil {
		if isNotExist(err) {
			return Manifest{}, false, nil
		}
		return Manifest{}, false, err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return Manifest{}, false, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return Manifest{}, false, fmt.Errorf("%s in %s is not a manifest: %v", ManifestName, loc, err)
	}
	if m.Format != FormatVersion {
		return Manifest{}, false, fmt.Errorf("%s in %s has format %d, not %d", ManifestName, loc, m.Format, FormatVersion)
	}
	if _, err := DecodeHeader(m.Header); err != nil {
		return Manifest{}, false, fmt.Errorf("%s in %s: %w", ManifestName, loc, err)
	}
	return m, true, nil
}
