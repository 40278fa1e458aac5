package verify

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// The history file: JSON lines, appended to and never rewritten. Each
// ingest run starts a session; each operation is written twice, once when
// it is invoked and once when it returns, so that an operation under way
// when the ingest process died still counts as attempted:
//
//	{"t":"session","session":"3fa2c1d0","base":1718000000000000000,"table":"verify"}
//	{"t":"call","id":17,"k":"list","w":3,"row":"9c0e…","prev":"41d7…","at":1250000}
//	{"t":"ret","id":17,"out":"ack","at":1893000}
//	{"t":"call","id":18,"k":"incr","w":9,"row":"7e-ctr-3fa2c1d0-00000-1","at":1300000}
//	{"t":"ret","id":18,"out":"unknown","err":"rpc error: code = Unavailable …","at":11300000}
//
// Times ("at") are monotonic nanoseconds since the session's start; "base"
// is the wall clock at that start (Unix nanoseconds), which places the
// sessions of one file on one time line. Operation ids are unique within
// their session. A line torn by a crash may end a session (it is followed
// by the next session's record or by the end of the file); the reader skips
// it. The writer flushes and fsyncs every HistoryOptions.SyncInterval, so a
// crash of the machine (not just of the process) may lose the last moments.

// Kind is the kind of an operation.
type Kind string

// The kinds of operations.
const (
	// KindList writes one node of a linked list: a new row pointing (l:prev)
	// to the previous acknowledged node of the same writer.
	KindList Kind = "list"
	// KindIncr increments a counter row by one with ReadModifyWrite and
	// returns the new value.
	KindIncr Kind = "incr"
	// KindCAS moves a chain row from step From to step To with
	// CheckAndMutate, only if its newest step is From.
	KindCAS Kind = "cas"
	// KindRead reads a chain row's newest step.
	KindRead Kind = "read"
)

// Outcome is what became of an operation.
type Outcome string

// The outcomes.
const (
	// Pending: invoked, never returned (the ingest process died). Treated
	// as Unknown.
	Pending Outcome = ""
	// Acked: the cluster acknowledged it (a CAS: and its predicate matched).
	Acked Outcome = "ack"
	// Failed: definitely not applied: refused before it was applied, or a
	// CAS whose predicate did not match (NoMatch).
	Failed Outcome = "fail"
	// Unknown: may or may not have been applied (timeouts, UNAVAILABLE).
	Unknown Outcome = "unknown"
)

// Op is one operation of a history.
type Op struct {
	// Session is the index of the op's session in the file (0 first).
	Session int `json:"-"`
	// ID is unique within the session.
	ID     int64  `json:"id,omitempty"`
	Kind   Kind   `json:"k,omitempty"`
	Worker int    `json:"w,omitempty"`
	Row    string `json:"row,omitempty"`
	// Prev is a list node's pointer (KindList; "" for a list's first node).
	Prev string `json:"prev,omitempty"`
	// From and To are a CAS's steps; Token is written with To and names
	// the op in the row (KindCAS).
	From  int64  `json:"from,omitempty"`
	To    int64  `json:"to,omitempty"`
	Token string `json:"tok,omitempty"`
	// Call and Return are when the op was invoked and returned, in
	// nanoseconds on the history's time line; Return is 0 for a pending op.
	Call   int64 `json:"-"`
	Return int64 `json:"-"`

	Outcome Outcome `json:"out,omitempty"`
	// Value is the new value of an acknowledged increment, or the step a
	// read saw.
	Value int64 `json:"v,omitempty"`
	// NoMatch marks a Failed CAS whose predicate did not match (an
	// observation of the row), as opposed to one refused outright.
	NoMatch bool   `json:"nomatch,omitempty"`
	Err     string `json:"err,omitempty"`
}

// Ambiguous reports whether the op may or may not have taken effect.
func (o *Op) Ambiguous() bool { return o.Outcome == Unknown || o.Outcome == Pending }

// record is one line of the history file.
type record struct {
	T string `json:"t"`
	Op
	At int64 `json:"at"`
	// Session records only.
	SessionTag string `json:"session,omitempty"`
	Base       int64  `json:"base,omitempty"`
	Table      string `json:"table,omitempty"`
}

// HistoryOptions configure a HistoryWriter.
type HistoryOptions struct {
	// SyncInterval is how often buffered records are written and fsynced.
	// The default is 500ms.
	SyncInterval time.Duration
	// Table is recorded in the session record. The default is "".
	Table string
}

// HistoryWriter appends one session of operations to a history file. It
// is safe for concurrent use.
type HistoryWriter struct {
	f     *os.File
	start time.Time // monotonic base of the session
	tag   string

	// mu protects the fields below.
	mu     sync.Mutex
	w      *bufio.Writer
	nextID int64
	err    error
	closed bool

	stop chan struct{}
	wg   sync.WaitGroup
}

// CreateHistory opens (creating if needed) the history file at path for
// appending and starts a new session tagged tag.
func CreateHistory(path, tag string, o HistoryOptions) (_ *HistoryWriter, err error) {
	if o.SyncInterval <= 0 {
		o.SyncInterval = 500 * time.Millisecond
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("verify: opening history: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	h := &HistoryWriter{f: f, start: time.Now(), tag: tag, w: bufio.NewWriterSize(f, 256<<10), stop: make(chan struct{})}
	// A line torn by an earlier crash must not swallow the session record.
	if st, err := f.Stat(); err != nil {
		return nil, err
	} else if st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err != nil {
			return nil, fmt.Errorf("verify: reading history: %w", err)
		}
		if last[0] != '\n' {
			h.w.WriteByte('\n')
		}
	}
	h.writeLocked(record{T: "session", SessionTag: tag, Base: h.start.UnixNano(), Table: o.Table})
	if err := h.syncLocked(); err != nil {
		return nil, err
	}
	h.wg.Add(1)
	go h.syncLoop(o.SyncInterval)
	return h, nil
}

// Tag returns the session's tag.
func (h *HistoryWriter) Tag() string { return h.tag }

// Now returns the session's monotonic clock in nanoseconds.
func (h *HistoryWriter) Now() int64 { return int64(time.Since(h.start)) }

// Call records the invocation of op (its ID is assigned) and returns the
// ID to pass to Return.
func (h *HistoryWriter) Call(op Op) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nextID++
	op.ID = h.nextID
	op.Outcome, op.Value, op.NoMatch, op.Err = "", 0, false, ""
	h.writeLocked(record{T: "call", Op: op, At: h.Now()})
	return op.ID
}

// Return records the outcome of the op with the given ID.
func (h *HistoryWriter) Return(id int64, out Outcome, value int64, noMatch bool, err error) {
	r := record{T: "ret", Op: Op{ID: id, Outcome: out, Value: value, NoMatch: noMatch}, At: h.Now()}
	if err != nil {
		r.Err = err.Error()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.writeLocked(r)
}

func (h *HistoryWriter) writeLocked(r record) {
	if h.err != nil || h.closed {
		return
	}
	b, err := json.Marshal(r)
	if err != nil {
		h.err = err
		return
	}
	b = append(b, '\n')
	if _, err := h.w.Write(b); err != nil {
		h.err = fmt.Errorf("verify: writing history: %w", err)
	}
}

func (h *HistoryWriter) syncLocked() error {
	if h.err != nil {
		return h.err
	}
	if err := h.w.Flush(); err != nil {
		h.err = fmt.Errorf("verify: writing history: %w", err)
	} else if err := h.f.Sync(); err != nil {
		h.err = fmt.Errorf("verify: syncing history: %w", err)
	}
	return h.err
}

// syncLoop flushes and fsyncs periodically until Close.
func (h *HistoryWriter) syncLoop(every time.Duration) {
	defer h.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
			// Hand the buffer to the kernel under the lock, fsync outside it
			// so that writers do not wait for the disk.
			h.mu.Lock()
			if h.err == nil {
				if err := h.w.Flush(); err != nil {
					h.err = fmt.Errorf("verify: writing history: %w", err)
				}
			}
			h.mu.Unlock()
			if err := h.f.Sync(); err != nil {
				h.mu.Lock()
				if h.err == nil {
					h.err = fmt.Errorf("verify: syncing history: %w", err)
				}
				h.mu.Unlock()
			}
		}
	}
}

// Err returns the first write error, if any.
func (h *HistoryWriter) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// Close flushes, fsyncs and closes the file. It is idempotent.
func (h *HistoryWriter) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return h.err
	}
	h.mu.Unlock()
	close(h.stop)
	h.wg.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	err := h.syncLocked()
	h.closed = true
	if cerr := h.f.Close(); err == nil && cerr != nil {
		err = cerr
		h.err = err
	}
	return err
}

// Session describes one ingest run of a history.
type Session struct {
	Tag   string
	Table string
	// Base is the wall clock at the session's start (Unix nanoseconds).
	Base int64
}

// History is a history file read back: its sessions and every operation,
// in invocation order within each session.
type History struct {
	Sessions []Session
	Ops      []Op
	// Torn counts lines skipped because a crash tore them.
	Torn int
}

// ReadHistory reads a history file.
func ReadHistory(path string) (*History, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("verify: opening history: %w", err)
	}
	defer f.Close()
	h, err := decodeHistory(f)
	if err != nil {
		return nil, fmt.Errorf("verify: history %s: %w", path, err)
	}
	return h, nil
}

// errBadLine marks a history line that cannot be parsed and is not a torn
// last line.
var errBadLine = errors.New("malformed line")

// DecodeHistory reads a history from r.
func DecodeHistory(r io.Reader) (*History, error) {
	h, err := decodeHistory(r)
	if err != nil {
		return nil, fmt.Errorf("verify: history: %w", err)
	}
	return h, nil
}

// decodeHistory is DecodeHistory; its errors name the line, and the
// caller says which history.
func decodeHistory(r io.Reader) (*History, error) {
	h := &History{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var (
		byID    map[int64]int // op id → index in h.Ops, current session
		base    int64
		badLine = 0 // a line that did not parse, waiting to see what follows
		lineNo  = 0
	)
	for sc.Scan() {
		lineNo++
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var rec record
		if err := json.Unmarshal(line, &rec); err != nil {
			if badLine != 0 {
				return nil, fmt.Errorf("line %d: %w", badLine, errBadLine)
			}
			badLine = lineNo
			continue
		}
		if badLine != 0 {
			if rec.T != "session" {
				return nil, fmt.Errorf("line %d: %w", badLine, errBadLine)
			}
			h.Torn++
			badLine = 0
		}
		switch rec.T {
		case "session":
			h.Sessions = append(h.Sessions, Session{Tag: rec.SessionTag, Table: rec.Table, Base: rec.Base})
			byID, base = map[int64]int{}, rec.Base
			if len(h.Sessions) > 1 && base <= h.Sessions[len(h.Sessions)-2].Base {
				return nil, fmt.Errorf("line %d: session %s starts before the previous one (clock went back?)", lineNo, rec.SessionTag)
			}
		case "call":
			if byID == nil {
				return nil, fmt.Errorf("line %d: an operation before any session record", lineNo)
			}
			op := rec.Op
			op.Session = len(h.Sessions) - 1
			op.Call = base + rec.At
			op.Outcome = Pending
			if _, dup := byID[op.ID]; dup {
				return nil, fmt.Errorf("line %d: operation %d invoked twice", lineNo, op.ID)
			}
			byID[op.ID] = len(h.Ops)
			h.Ops = append(h.Ops, op)
		case "ret":
			i, ok := byID[rec.ID]
			if !ok {
				return nil, fmt.Errorf("line %d: return of operation %d that was never invoked", lineNo, rec.ID)
			}
			op := &h.Ops[i]
			if op.Return != 0 {
				return nil, fmt.Errorf("line %d: operation %d returned twice", lineNo, rec.ID)
			}
			switch rec.Outcome {
			case Acked, Failed, Unknown:
			default:
				return nil, fmt.Errorf("line %d: operation %d has outcome %q", lineNo, rec.ID, rec.Outcome)
			}
			op.Return = base + rec.At
			op.Outcome, op.Value, op.NoMatch, op.Err = rec.Outcome, rec.Value, rec.NoMatch, rec.Err
		default:
			return nil, fmt.Errorf("line %d: unknown record type %q", lineNo, rec.T)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if badLine != 0 {
		h.Torn++
	}
	return h, nil
}
