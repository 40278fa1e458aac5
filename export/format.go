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
	"path"
	"strings"
)

// Format is a file format an export writes (docs/OPERATIONS.md "Parquet
// and Avro files"). An import does not need it: it tells the formats
// apart by their first bytes.
type Format string

const (
	// JSONLines is one header line, then one row per line (the default).
	JSONLines Format = "jsonl"
	// Parquet is Cloud Bigtable's row schema as parquet-avro writes it.
	Parquet Format = "parquet"
	// Avro is an Avro object container file of Cloud Bigtable's rows.
	Avro Format = "avro"
)

// Formats lists the formats, the default first.
var Formats = []Format{JSONLines, Parquet, Avro}

// ParseFormat returns the format named s ("" is JSONLines).
func ParseFormat(s string) (Format, error) {
	if s == "" {
		return JSONLines, nil
	}
	for _, f := range Formats {
		if strings.EqualFold(s, string(f)) {
			return f, nil
		}
	}
	return "", fmt.Errorf("export: format %q is not one of jsonl, parquet, avro", s)
}

// FormatOfName returns the format a file name's extension names:
// .parquet, .avro, else JSONLines.
func FormatOfName(name string) Format {
	switch strings.ToLower(path.Ext(name)) {
	case ".parquet":
		return Parquet
	case ".avro":
		return Avro
	}
	return JSONLines
}

// Ext is the file name extension of f's files, with its dot.
func (f Format) Ext() string {
	if f == "" {
		return ".jsonl"
	}
	return "." + string(f)
}

// NewWriter returns a writer of one file in format f on w.
func NewWriter(f Format, w io.Writer, opts FileOptions) (RowWriter, error) {
	switch f {
	case JSONLines, "":
		return NewJSONLinesWriter(w, opts)
	case Parquet:
		return NewParquetWriter(w, opts)
	case Avro:
		return NewAvroWriter(w, opts)
	}
	return nil, fmt.Errorf("export: format %q is not one of jsonl, parquet, avro", f)
}

// parquetMagic starts (and ends) every Parquet file.
var parquetMagic = []byte("PAR1")

// sniff returns the format of a file starting with b: Parquet's or Avro's
// magic bytes, else JSON lines (whose reader says what is wrong with a
// file that is none of them).
func sniff(b []byte) Format {
	switch {
	case bytes.HasPrefix(b, parquetMagic):
		return Parquet
	case bytes.HasPrefix(b, avroMagic[:]):
		return Avro
	}
	return JSONLines
}

// fileReader reads the rows of one file of any format, and says where
// in the file the last row was (a line of JSON lines, a row number of
// the others) for errors.
type fileReader struct {
	RowReader
	jr     *JSONLinesReader
	rows   int
	header []byte
	closer io.Closer
}

// ReadRow returns the next row, io.EOF after the last.
func (f *fileReader) ReadRow() (Row, error) {
	r, err := f.RowReader.ReadRow()
	if err == nil {
		f.rows++
	}
	return r, err
}

// pos is where the last row returned starts: "line N" or "row N".
func (f *fileReader) pos() (string, int) {
	if f.jr != nil {
		return "line", f.jr.Line
	}
	return "row", f.rows
}

func (f *fileReader) Close() error { return f.closer.Close() }

// sizedReaderAt is a file a Parquet reader can read in place (a local
// file); other sources are copied to a temporary file first.
type sizedReaderAt interface {
	io.ReaderAt
	Stat() (fs.FileInfo, error)
}

// openFile opens s and reads its header, in whichever format its first
// bytes say. A Parquet file's index is at its end: one that is not a
// local file (an object, standard input) is first copied to an unlinked
// temporary file, so that only the row group being read is in memory.
func openFile(ctx context.Context, s Source) (*fileReader, error) {
	rc, err := s.Open(ctx)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", s.Name, err)
	}
	return readerOf(rc, s.Name)
}

// readerOf reads rc's header; on an error it has closed rc.
func readerOf(rc io.ReadCloser, name string) (_ *fileReader, err error) {
	if p, ok := rc.(preOpened); ok {
		return p.fr, nil
	}
	fr := &fileReader{closer: rc}
	defer func() {
		if err != nil {
			fr.closer.Close()
		}
	}()
	br := bufio.NewReaderSize(rc, 256<<10)
	magic, err := br.Peek(4)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	switch sniff(magic) {
	case Parquet:
		ra, ok := rc.(sizedReaderAt)
		if !ok {
			tmp, err := spool(br)
			if err != nil {
				return nil, fmt.Errorf("copying %s to a temporary file: %w", name, err)
			}
			rc.Close()
			ra, fr.closer = tmp, tmp
		}
		fi, err := ra.Stat()
		if err != nil {
			return nil, err
		}
		if fr.RowReader, fr.header, err = NewParquetReader(ra, fi.Size()); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBadInput, name, err)
		}
	case Avro:
		if fr.RowReader, fr.header, err = NewAvroReader(br); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBadInput, name, err)
		}
	default:
		if fr.jr, err = NewJSONLinesReader(br, name); err != nil {
			return nil, err
		}
		fr.RowReader, fr.header = fr.jr, fr.jr.Header()
		return fr, nil
	}
	if fr.header != nil {
		if _, err := DecodeHeader(fr.header); err != nil {
			return nil, fmt.Errorf("%w: %s: metadata %s: %v", ErrBadInput, name, HeaderMetadataKey, err)
		}
	}
	return fr, nil
}

// spool copies r to a temporary file that is already unlinked (it goes
// when it is closed) and returns it, read from its start.
func spool(r io.Reader) (*os.File, error) {
	f, err := os.CreateTemp("", "tabula-import-*.parquet")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name())
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// preOpened hands a fileReader StreamSource opened to the import that
// opens its Source.
type preOpened struct{ fr *fileReader }

func (preOpened) Read([]byte) (int, error) {
	return 0, errors.New("export: a pre-opened stream is read through its rows")
}

func (p preOpened) Close() error { return p.fr.Close() }
