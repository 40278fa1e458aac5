package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/export"
	"github.com/tabuladb/tabula/rowfilter"
)

// export and import only parse flags: the formats and the jobs are the
// export package's (docs/OPERATIONS.md "Exports and imports").

func newExportCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "export TABLE [--file PATH | --to DIR|s3://BUCKET/PREFIX [--workers N]] [--format jsonl|parquet|avro] [--range START,END] [--as-of T]",
		Short: "Write every cell (all versions) of a table as JSON lines, Parquet or Avro, with its schema",
		Long: `Write every cell of the rows in [--start, --end) (or --range START,END, or --prefix),
all versions, as JSON lines: a header line with the table's schema (families
with every setting, split points), the cut and the format version, then one
line per row in Cloud Bigtable's row schema, every key, qualifier and value
in base64. "tabula import" reads it back (--create recreates the table).

--format parquet or avro (default: from --file's extension .parquet or .avro,
else jsonl) writes the same rows in Cloud Bigtable's row schema as Google's
Dataflow templates do (Parquet as parquet-avro lays it out, Snappy), which
Spark, DuckDB, BigQuery and the templates read; the header is in the file's
metadata under "tabula.header" (docs/OPERATIONS.md "Parquet and Avro files").

--as-of T (RFC 3339 or microseconds; default: when the export starts) exports
the cells with timestamps <= T, so that parallel exports agree on one cut.
--to DIR or s3://BUCKET/PREFIX writes part-NNNNN.jsonl (.parquet, .avro) files
and manifest.json there; --workers N cuts the range into N parts of similar size (SampleRowKeys)
exported at once. Progress goes to stderr: a progress bar when stderr is a
terminal, a line a second with --progress otherwise; a summary line at the end.`,
		Example: `  tabula export users --file users.jsonl
  tabula export users --to ./users-export --workers 4
  tabula export users --file users.parquet
  tabula export users --to ./users-parquet --workers 4 --format parquet
  tabula export users --to s3://backups/users?endpoint=http://127.0.0.1:8333 --workers 8
  tabula export users --range a,m --as-of 2026-12-06T19:00:00Z --file a-m.jsonl`,
		Args: cobra.ExactArgs(1),
		RunE: runExport,
	}
	c.Flags().String("start", "", "first row (inclusive; default: the first row)")
	c.Flags().String("end", "", "end row (exclusive; default: past the last row)")
	c.Flags().String("prefix", "", "only rows starting with this prefix (not with --start/--end)")
	c.Flags().String("range", "", "rows in [START,END) (either may be left out), as keys are typed")
	c.Flags().StringSlice("columns", nil, "only these columns: FAMILY or FAMILY:QUALIFIER, comma-separated")
	c.Flags().String("file", "", "write to this file (default: stdout)")
	c.Flags().String("to", "", "write part files and a manifest to this directory or s3://BUCKET/PREFIX")
	c.Flags().Int("workers", 1, "with --to: export this many key ranges of similar size at once")
	c.Flags().String("format", "", "file format: jsonl, parquet or avro (default: from --file's extension, else jsonl)")
	c.Flags().String("as-of", "", "export cells with timestamps <= T (RFC 3339 or microseconds; default: now)")
	c.Flags().Bool("progress", false, "print progress to stderr every second even when it is not a terminal")
	return c
}

// exportSpec parses export's flags into options.
func exportSpec(cmd *cobra.Command, table string) (export.ExportOptions, error) {
	o := export.ExportOptions{Table: table}
	items, _ := cmd.Flags().GetStringSlice("columns")
	cols, err := parseColumns(items, false)
	if err != nil {
		return o, err
	}
	if o.Filter, err = (readSpec{cols: cols}).filter(); err != nil {
		return o, err
	}
	if asOf, _ := cmd.Flags().GetString("as-of"); asOf != "" {
		if o.AsOf, err = rowfilter.ParseTime(asOf); err != nil {
			return o, cell.Invalidf("--as-of: %v", err)
		}
		if o.AsOf == 0 {
			return o, cell.Invalidf("--as-of 0 would export nothing but cells at timestamp 0; give a time after the epoch")
		}
	}
	if rng, _ := cmd.Flags().GetString("range"); rng != "" {
		for _, f := range []string{"start", "end", "prefix"} {
			if cmd.Flags().Changed(f) {
				return o, cell.Invalidf("--range cannot be combined with --%s; use one or the other", f)
			}
		}
		a, b, err := splitPair("--range", rng)
		if err != nil {
			return o, err
		}
		if a != "" {
			if o.Start, err = parseBytesArg("--range START", a, false); err != nil {
				return o, err
			}
		}
		if b != "" {
			if o.End, err = parseBytesArg("--range END", b, false); err != nil {
				return o, err
			}
			// An empty END ("" as `table ranges` prints the table's end)
			// is the table's end.
			if len(o.End) > 0 && string(o.End) <= string(o.Start) {
				return o, cell.Invalidf("--range %q is empty: END must sort after START (the range is [START, END))", rng)
			}
		}
		return o, nil
	}
	var keys [3][]byte
	for i, name := range []string{"start", "end", "prefix"} {
		if v, _ := cmd.Flags().GetString(name); v != "" {
			if keys[i], err = parseBytesArg("--"+name, v, false); err != nil {
				return o, err
			}
		}
	}
	o.Start, o.End = keys[0], keys[1]
	if keys[2] != nil {
		if o.Start != nil || o.End != nil {
			return o, cell.Invalidf("--prefix cannot be combined with --start or --end; use one or the other")
		}
		o.Start, o.End = keys[2], prefixEnd(keys[2])
	}
	if len(o.Start) > 0 && len(o.End) > 0 && string(o.Start) >= string(o.End) { // an empty END ("") is the table's end
		return o, cell.Invalidf("--start %s is not before --end %s; the range is [start, end)", display(o.Start), display(o.End))
	}
	return o, nil
}

// prefixEnd is the first key after every key starting with p (nil: none).
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

func runExport(cmd *cobra.Command, args []string) (err error) {
	o, err := exportSpec(cmd, args[0])
	if err != nil {
		return err
	}
	to, _ := cmd.Flags().GetString("to")
	path, _ := cmd.Flags().GetString("file")
	o.Workers, _ = cmd.Flags().GetInt("workers")
	if o.Workers < 1 {
		return cell.Invalidf("--workers %d is not positive; give how many ranges to export at once, e.g. 4", o.Workers)
	}
	if to != "" && path != "" {
		return cell.Invalidf("--file and --to cannot be combined; give a file, or a directory or s3:// prefix for part files")
	}
	if o.Workers > 1 && to == "" {
		return cell.Invalidf("--workers %d needs --to DIR or s3://BUCKET/PREFIX: a parallel export writes one file per range", o.Workers)
	}
	if f, _ := cmd.Flags().GetString("format"); f != "" {
		if o.Format, err = export.ParseFormat(f); err != nil {
			return cell.Invalidf("--format %q is not one of jsonl, parquet, avro", f)
		}
	} else if path != "" {
		o.Format = export.FormatOfName(path)
	}
	if o.AsOf == 0 {
		o.AsOf = export.AsOfNow()
	}
	s, err := connectLong(cmd)
	if err != nil {
		return err
	}
	defer s.close()
	prog := startProgress(cmd, "export")
	defer func() { prog.finish("exported", err) }()
	o.Progress = func(rows, cells, bytes int64) { prog.add(rows, cells, bytes) }
	if prog.shown() {
		// How far it is: each range's last key against the table's
		// samples, as count does.
		if samples, err := s.cli.Open(o.Table).SampleRowKeys(s.ctx, client.SampleTargetBytes(8<<20), client.SampleRange(o.Start, o.End)); err == nil {
			o.At = rangesProgress(prog, samples, o.Start, o.End)
		}
	}

	if to != "" {
		loc, err := export.OpenLocation(s.ctx, to, true)
		if err != nil {
			return fmt.Errorf("--to %s: %w", to, err)
		}
		m, err := export.Export(s.ctx, s.cli, loc, o)
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "export: %d files and %s in %s, as of %d\n", len(m.Files), export.ManifestName, loc, o.AsOf)
		return nil
	}
	h, err := export.ReadHeader(s.ctx, s.cli, o.Table, o.AsOf, o.Start, o.End)
	if err != nil {
		return err
	}
	hb, err := export.EncodeHeader(h)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if path != "" {
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
	jw, err := export.NewWriter(o.Format, out, export.FileOptions{Header: hb})
	if err != nil {
		return fmt.Errorf("writing export: %w", err)
	}
	var at func([]byte)
	if o.At != nil {
		at = func(key []byte) { o.At(o.Start, o.End, key) }
	}
	if _, err := export.WriteRange(s.ctx, s.cli.Open(o.Table), o.Start, o.End, export.Cut(o.AsOf, o.Filter), jw, o.Progress, at); err != nil {
		return err
	}
	if err := jw.Close(); err != nil {
		return fmt.Errorf("writing export: %w", err)
	}
	return nil
}

func newImportCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "import TABLE [--file PATH | --from DIR|s3://BUCKET/PREFIX] [--create] [--workers N] [--batch N]",
		Short: "Write the rows of an export to a table",
		Long: `Read an export (this release's JSON lines, Parquet or Avro in Cloud Bigtable's
row schema, or the cell lines of earlier releases; the format is told by the
file's first bytes, not its name) and write its cells, each with the timestamp
it has. Each row is
one atomic mutation (rows wider than 100,000 cells or 2 MiB go in several);
rows are sent in batches of --batch whole rows, --workers batches at once.
Because every timestamp is explicit, rerunning an import writes the same cells
again and changes nothing.

--from DIR or s3://BUCKET/PREFIX imports the files of its manifest.json (or
every *.jsonl, *.parquet and *.avro file), --workers at once, recording each finished file in the
--state file (default: DIR/import-TABLE.state, or ./import-TABLE-HASH.state
for s3://, HASH from the URL): a rerun after a kill or a failure skips them.
A missing table fails before any row is written, unless --create recreates it
from the export's header (families with their settings, split points): the
manifest's, the first line of JSON lines, or a Parquet or Avro file's
"tabula.header" metadata (files other tools wrote have none: create the table
first). A Parquet file that is not local (s3://, standard input) is first
copied to a temporary file: its index is at its end.`,
		Example: `  tabula import users2 --file users.jsonl --create
  tabula import users2 --file users.parquet --create
  tabula import users2 --from ./users-export --workers 8 --create
  tabula export users | tabula import users2`,
		Args: cobra.ExactArgs(1),
		RunE: runImport,
	}
	c.Flags().String("file", "", "read from this file (default: stdin)")
	c.Flags().String("from", "", "import the export in this directory or s3://BUCKET/PREFIX")
	c.Flags().Bool("create", false, "create the table from the export's header when it does not exist")
	c.Flags().Int("workers", 4, "batches written at once (and files read at once with --from)")
	c.Flags().String("state", "", "with --from: the local file recording finished files (resume)")
	c.Flags().Int("batch", 500, "rows per ApplyBulk call")
	c.Flags().Bool("progress", false, "print progress to stderr every second even when it is not a terminal")
	return c
}

func newBulkloadCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "bulkload TABLE [FILE...] [--from DIR|s3://BUCKET/PREFIX] [--create] [--workers N]",
		Short: "Load an export as new SSTables of the tablets (no commit log, no memtable)",
		Long: `Load the rows of an export (FILEs, or the files of --from's manifest.json; JSON
lines, Parquet or Avro, told by their first bytes) as "tabula import" does,
but with the tablet servers' bulk load: each tablet's share of a file (up to
64 MiB of rows at a time) is written straight into new SSTables and published
whole or not at all, without the commit log, the memtable or the compactions
an import's writes cause (docs/OPERATIONS.md
"Bulk load"). Each file's rows must be in key order (an export's are), in bytes
families (an aggregate family's cells would add to what is there: import
those). A loaded cell replaces an older one of the same column and
timestamp; loading a file again writes the same cells. --workers files load at
once; --from records finished files in --state, as import does.`,
		Example: `  tabula bulkload users2 --from ./users-export --create
  tabula bulkload users2 part-00000.jsonl part-00001.jsonl`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runLoad(cmd, args, true) },
	}
	c.Flags().String("from", "", "load the export in this directory or s3://BUCKET/PREFIX")
	c.Flags().Bool("create", false, "create the table from the export's header when it does not exist")
	c.Flags().Int("workers", 4, "files loaded at once")
	c.Flags().String("state", "", "with --from: the local file recording finished files (resume)")
	c.Flags().Bool("progress", false, "print progress to stderr every second even when it is not a terminal")
	return c
}

func runImport(cmd *cobra.Command, args []string) error { return runLoad(cmd, args, false) }

// runLoad runs import, or bulkload when bulk is set (FILE arguments after
// the table, and no --file or --batch).
func runLoad(cmd *cobra.Command, args []string, bulk bool) (err error) {
	o := export.ImportOptions{Table: args[0], Bulk: bulk}
	verb := "import"
	if bulk {
		verb = "bulkload"
	} else {
		o.BatchRows, _ = cmd.Flags().GetInt("batch")
		if o.BatchRows < 1 {
			return cell.Invalidf("--batch %d is not positive; give the number of rows per write, e.g. 500", o.BatchRows)
		}
	}
	o.Workers, _ = cmd.Flags().GetInt("workers")
	if o.Workers < 1 {
		return cell.Invalidf("--workers %d is not positive; give how many batches to write at once, e.g. 4", o.Workers)
	}
	o.Create, _ = cmd.Flags().GetBool("create")
	from, _ := cmd.Flags().GetString("from")
	path, _ := cmd.Flags().GetString("file")
	files := args[1:]
	o.State, _ = cmd.Flags().GetString("state")
	if bulk && from == "" && len(files) == 0 {
		return cell.Invalidf("bulkload needs files: give FILE arguments or --from DIR|s3://BUCKET/PREFIX (standard input cannot be loaded: its rows would have to be held whole)")
	}
	if from != "" && len(files) > 0 {
		return cell.Invalidf("FILE arguments and --from cannot be combined; give files, or the directory or s3:// prefix of an export")
	}
	if from != "" && path != "" {
		return cell.Invalidf("--file and --from cannot be combined; give a file, or the directory or s3:// prefix of an export")
	}
	if o.State != "" && from == "" {
		return cell.Invalidf("--state needs --from: only a directory or prefix of files is resumed file by file")
	}
	s, err := connectLong(cmd)
	if err != nil {
		return err
	}
	defer s.close()

	var srcs []export.Source
	var header []byte
	switch {
	case from != "":
		loc, err := export.OpenLocation(s.ctx, from, false)
		if err != nil {
			return fmt.Errorf("--from %s: %w", from, err)
		}
		if srcs, header, err = export.LocationSources(s.ctx, loc); err != nil {
			return err
		}
		if o.State == "" {
			o.State = filepath.Join(from, verb+"-"+o.Table+".state")
			if isURL(from) {
				// In the working directory, named for the prefix too, so
				// that imports of one table from two prefixes do not share it.
				sum := sha256.Sum256([]byte(from))
				o.State = fmt.Sprintf("%s-%s-%x.state", verb, o.Table, sum[:4])
			}
		}
	case len(files) > 0:
		for _, f := range files {
			if _, err := os.Stat(f); err != nil {
				return fmt.Errorf("opening %s file: %w", verb, err)
			}
			srcs = append(srcs, export.FileSource(f))
		}
	case path != "":
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("opening import file: %w", err)
		}
		srcs = []export.Source{export.FileSource(path)}
	default:
		src, h, err := export.StreamSource("stdin", cmd.InOrStdin())
		if err != nil {
			return err
		}
		srcs, header = []export.Source{src}, h
	}

	prog := startProgress(cmd, verb)
	defer func() { prog.finish(verb+"ed", err) }()
	o.Progress = func(rows, cells, bytes int64) { prog.add(rows, cells, bytes) }
	srcs = measureSources(prog, srcs)
	st, err := export.Import(s.ctx, s.cli, srcs, header, o)
	if st.Created {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: created table %s from the export's header\n", verb, o.Table)
	}
	if st.Skipped > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: skipped %d files %s records as done\n", verb, st.Skipped, o.State)
	}
	if err != nil && o.State != "" {
		err = fmt.Errorf("%w (%d files finished are recorded in %s; rerunning skips them)", err, st.Files+st.Skipped, o.State)
	}
	return err
}

// isURL reports whether a location is an object store's.
func isURL(s string) bool { return len(s) > 5 && s[:5] == "s3://" }
