package gateway_test

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"cloud.google.com/go/bigtable"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	btpb "cloud.google.com/go/bigtable/apiv2/bigtablepb"

	"github.com/tabuladb/tabula/gateway"
)

// largeTable writes rows around values larger than a message: a 10 MiB
// cell between small ones, and a row of three 1.5 MiB cells (larger than a
// message, each cell smaller). It returns the rows as strictReader renders
// them.
func largeTable(t *testing.T, table string) []string {
	t.Helper()
	_, a := bigtableClients(t)
	createTable(t, a, &bigtable.TableConf{TableID: table, Families: map[string]bigtable.GCPolicy{"cf": bigtable.NoGcPolicy(), "cg": bigtable.NoGcPolicy()}})
	tbl := bigClient(t).Open(table)
	big := bytes.Repeat([]byte("0123456789abcdef"), 10<<20/16)
	big[len(big)-1] = 'Z'
	apply(t, tbl, "a", set("cf", "q", 1000, "small"))
	m := bigtable.NewMutation()
	m.Set("cf", "big", 1000, big)
	m.Set("cg", "after", 1000, []byte("tail"))
	apply(t, tbl, "b", m)
	m = bigtable.NewMutation()
	for i := range 3 {
		m.Set("cf", fmt.Sprintf("q%d", i), 1000, bytes.Repeat([]byte{byte('x' + i)}, 3<<19))
	}
	apply(t, tbl, "c", m)
	apply(t, tbl, "d", set("cf", "q", 1000, "last"))
	return []string{
		"a cf:q@1000 5 bytes s...l",
		"b cf:big@1000 10485760 bytes 0...Z cg:after@1000 4 bytes t...l",
		"c cf:q0@1000 1572864 bytes x...x cf:q1@1000 1572864 bytes y...y cf:q2@1000 1572864 bytes z...z",
		"d cf:q@1000 4 bytes l...t",
	}
}

// strictReader reassembles ReadRows messages with every rule the official
// clients' chunk readers check, so that what it accepts all of them do:
//   - Python (data/_async/_read_rows.py chunk_stream): the first chunk of
//     every message names a row (non-empty key) once a row was committed,
//     and that key is greater than the last committed one;
//   - Java (readrows/StateMachine.java): a chunk inside a cell carries no
//     family, qualifier, timestamp or labels, value_size is the whole
//     value's on every chunk but the last, the last completes it exactly,
//     no commit before then; a key inside a row is that row's;
//   - Node.js (chunktransformer.ts) and Go (reader.go): a new row has a key,
//     family and qualifier; a commit ends the stream's last row.
type strictReader struct {
	t          *testing.T
	rows       []string
	lastKey    []byte
	committed  bool
	key        []byte // of the row in progress, nil between rows
	cells      []string
	fam, qual  string
	ts         int64
	val        []byte
	size       int32 // the whole value's size while a cell is in progress
	messages   int
	splitCells int
	midRow     int // messages that began inside a row
}

func (r *strictReader) message(resp *btpb.ReadRowsResponse) {
	r.t.Helper()
	r.messages++
	for i, ch := range resp.Chunks {
		if i == 0 && r.key != nil {
			r.midRow++
		}
		if i == 0 && r.committed {
			if len(ch.RowKey) == 0 || bytes.Compare(ch.RowKey, r.lastKey) <= 0 {
				r.t.Fatalf("message %d begins with row key %q after committed row %q (the Python client refuses it)", r.messages, ch.RowKey, r.lastKey)
			}
		}
		r.chunk(ch)
	}
}

func (r *strictReader) chunk(ch *btpb.ReadRowsResponse_CellChunk) {
	r.t.Helper()
	if ch.GetResetRow() {
		r.t.Fatalf("reset_row: the gateway never resets")
	}
	if r.size > 0 { // inside a cell
		if ch.FamilyName != nil || ch.Qualifier != nil || ch.TimestampMicros != 0 || len(ch.Labels) > 0 {
			r.t.Fatalf("chunk inside a cell names a cell: %v", ch)
		}
		if len(ch.RowKey) > 0 && !bytes.Equal(ch.RowKey, r.key) {
			r.t.Fatalf("row key %q inside row %q", ch.RowKey, r.key)
		}
		r.val = append(r.val, ch.Value...)
		if ch.ValueSize != 0 {
			if ch.ValueSize != r.size || ch.GetCommitRow() {
				r.t.Fatalf("middle chunk: value_size %d (want %d), commit %v", ch.ValueSize, r.size, ch.GetCommitRow())
			}
			return
		}
		if len(r.val) != int(r.size) {
			r.t.Fatalf("last chunk completes %d bytes of %d", len(r.val), r.size)
		}
		r.size = 0
		r.endCell(ch)
		return
	}
	if r.key == nil {
		if len(ch.RowKey) == 0 || ch.FamilyName == nil || ch.Qualifier == nil {
			r.t.Fatalf("new row without key, family or qualifier: %v", ch)
		}
		if r.committed && bytes.Compare(ch.RowKey, r.lastKey) <= 0 {
			r.t.Fatalf("row %q after %q", ch.RowKey, r.lastKey)
		}
		r.key = ch.RowKey
	} else if len(ch.RowKey) > 0 && !bytes.Equal(ch.RowKey, r.key) {
		r.t.Fatalf("row key %q inside row %q without a commit", ch.RowKey, r.key)
	}
	if ch.FamilyName != nil {
		if ch.Qualifier == nil {
			r.t.Fatalf("family without qualifier: %v", ch)
		}
		r.fam = ch.FamilyName.Value
	}
	if ch.Qualifier != nil {
		r.qual = string(ch.Qualifier.Value)
	}
	r.ts = ch.TimestampMicros
	r.val = append([]byte(nil), ch.Value...)
	if ch.ValueSize > 0 {
		if ch.GetCommitRow() || len(ch.Value) == 0 {
			r.t.Fatalf("first chunk of a split value: commit %v, %d bytes", ch.GetCommitRow(), len(ch.Value))
		}
		r.size = ch.ValueSize
		r.splitCells++
		return
	}
	r.endCell(ch)
}

func (r *strictReader) endCell(ch *btpb.ReadRowsResponse_CellChunk) {
	v := r.val
	r.cells = append(r.cells, fmt.Sprintf("%s:%s@%d %d bytes %c...%c", r.fam, r.qual, r.ts, len(v), v[0], v[len(v)-1]))
	if !ch.GetCommitRow() {
		return
	}
	r.rows = append(r.rows, fmt.Sprintf("%s %s", r.key, joinCells(r.cells)))
	r.lastKey, r.committed, r.key, r.cells = r.key, true, nil, nil
}

func joinCells(cells []string) string {
	var b bytes.Buffer
	for i, c := range cells {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(c)
	}
	return b.String()
}

// readStrict reads table through a raw client on addr that keeps gRPC's
// default 4 MiB receive limit, as the Python client's in emulator mode.
func readStrict(t *testing.T, addr, table string) *strictReader {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	st, err := btpb.NewBigtableClient(conn).ReadRows(testContext(t), &btpb.ReadRowsRequest{TableName: tablePath(table)})
	if err != nil {
		t.Fatal(err)
	}
	r := &strictReader{t: t}
	for {
		resp, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %d messages, rows %q: %v", r.messages, r.rows, err)
		}
		r.message(resp)
	}
	if r.key != nil {
		t.Fatalf("stream ended inside row %q", r.key)
	}
	return r
}

// TestLargeValuesAcrossMessages: a 10 MiB value reaches a client with
// gRPC's default 4 MiB receive limit as chunks across messages that the
// Python, Java and Node.js clients' readers all reassemble.
func TestLargeValuesAcrossMessages(t *testing.T) {
	want := largeTable(t, "large")
	// A caller that is not on Go's gRPC; this one is, so the gateway is
	// told to treat it as the others.
	p, err := gateway.Start("127.0.0.1:0", tabulaClient(t), gateway.Options{WholeRows: func(string) bool { return false }})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	r := readStrict(t, p.Addr(), "large")
	equal(t, "rows", r.rows, want)
	// 10 MiB in 1 MiB chunks, the 1.5 MiB cells in two each; rows b and c
	// each go across several messages.
	if r.splitCells != 4 || r.midRow < 10 {
		t.Errorf("%d split values, %d messages beginning inside a row; want 4 and >= 10", r.splitCells, r.midRow)
	}
}

// TestLargeValuesToTheGoClient: Google's Go client reads only whole rows
// per message; it gets them, so with its own receive limit raised (as
// outside emulator mode: 256 MiB) it reads the 10 MiB value.
func TestLargeValuesToTheGoClient(t *testing.T) {
	want := largeTable(t, "largego")
	var got []string
	err := bigClient(t).Open("largego").ReadRows(testContext(t), bigtable.InfiniteRange(""), func(row bigtable.Row) bool {
		var cells []string
		for _, fam := range sortedFamilies(row) {
			for _, it := range row[fam] {
				v := it.Value
				cells = append(cells, fmt.Sprintf("%s@%d %d bytes %c...%c", it.Column, it.Timestamp, len(v), v[0], v[len(v)-1]))
			}
		}
		got = append(got, row.Key()+" "+joinCells(cells))
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "rows", got, want)
}

func TestWholeRowsForGoOnly(t *testing.T) {
	for ua, want := range map[string]bool{
		"grpc-go/1.85.0":                                   true, // the Go client, cbt
		"my-app/1.0 grpc-go/1.72.0":                        true,
		"grpc-python/1.70.0 grpc-c/46.0.0 (linux; chttp2)": false,
		"grpc-java-netty/1.71.0":                           false,
		"grpc-node-js/1.12.6":                              false,
		"":                                                 false,
	} {
		if got := gateway.WholeRowsForGo(ua); got != want {
			t.Errorf("WholeRowsForGo(%q) = %v, want %v", ua, got, want)
		}
	}
}
