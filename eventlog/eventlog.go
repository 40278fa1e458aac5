package eventlog

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Key is the attribute that makes a log record an event; its value is the
// event's kind ("split", "flush", ...).
const Key = "event"

// DefaultSize is how many events a Ring keeps unless told otherwise:
// enough for the last minutes of a busy server, small enough (about
// 200 KB) to keep in every process.
const DefaultSize = 512

// Event is one kept record.
type Event struct {
	Time    time.Time
	Kind    string
	Table   string
	Tablet  string
	Message string
	// Attrs are the record's other attributes (and those of the logger's
	// With), as text, in order.
	Attrs []Attr
}

// Attr is one attribute of an Event.
type Attr struct{ Key, Value string }

// Ring keeps the last N events. Safe for concurrent use.
type Ring struct {
	mu   sync.Mutex
	buf  []Event
	next int  // where the next event goes
	full bool // buf has wrapped
}

// NewRing returns a ring keeping the last n events (DefaultSize if n <= 0).
func NewRing(n int) *Ring {
	if n <= 0 {
		n = DefaultSize
	}
	return &Ring{buf: make([]Event, n)}
}

// Add keeps e, dropping the oldest event if the ring is full.
func (r *Ring) Add(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf[r.next] = e
	r.next++
	if r.next == len(r.buf) {
		r.next, r.full = 0, true
	}
}

// Since returns the kept events at or after t (all for the zero time),
// oldest first.
func (r *Ring) Since(t time.Time) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	add := func(es []Event) {
		for _, e := range es {
			if !e.Time.Before(t) {
				out = append(out, e)
			}
		}
	}
	if r.full {
		add(r.buf[r.next:])
	}
	add(r.buf[:r.next])
	return out
}

// Handler returns a handler that passes every record next takes to next
// and keeps in r those at info or above carrying a Key attribute (in the
// record or in the logger's With), whether next takes them or not. A nil
// r keeps nothing.
func Handler(next slog.Handler, r *Ring) slog.Handler {
	if r == nil {
		return next
	}
	return &handler{next: next, ring: r}
}

// Logger wraps l's handler with Handler(…, r).
func Logger(l *slog.Logger, r *Ring) *slog.Logger {
	return slog.New(Handler(l.Handler(), r))
}

type handler struct {
	next  slog.Handler
	ring  *Ring
	attrs []slog.Attr // from WithAttrs, keys already qualified by groups
	group string      // the open group's prefix ("a.b."), for attributes
}

// Enabled is true from info up whatever next's level: events are kept
// even when the process logs only warnings.
func (h *handler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || h.next.Enabled(ctx, l)
}

func (h *handler) Handle(ctx context.Context, rec slog.Record) error {
	var e *Event
	note := func(a slog.Attr) {
		if a.Key == "" {
			return
		}
		if e == nil {
			e = &Event{}
		}
		v := a.Value.Resolve()
		switch a.Key {
		case Key:
			e.Kind = v.String()
			return
		case "table":
			e.Table = v.String()
			return
		case "tablet":
			e.Tablet = v.String()
			return
		}
		e.Attrs = append(e.Attrs, Attr{Key: a.Key, Value: v.String()})
	}
	kind := false
	for _, a := range h.attrs {
		kind = kind || a.Key == Key
	}
	rec.Attrs(func(a slog.Attr) bool {
		kind = kind || (h.group == "" && a.Key == Key)
		return true
	})
	if kind {
		for _, a := range h.attrs {
			note(a)
		}
		rec.Attrs(func(a slog.Attr) bool {
			if h.group != "" {
				a.Key = h.group + a.Key
			}
			note(a)
			return true
		})
		e.Time, e.Message = rec.Time, rec.Message
		if e.Time.IsZero() {
			e.Time = time.Now()
		}
		splitTablet(e)
		h.ring.Add(*e)
	}
	if !h.next.Enabled(ctx, rec.Level) {
		return nil
	}
	return h.next.Handle(ctx, rec)
}

// splitTablet turns a "table/tablet" tablet attribute (the tablet
// server's key) into table and tablet.
func splitTablet(e *Event) {
	if e.Table != "" {
		return
	}
	for i := 0; i < len(e.Tablet); i++ {
		if e.Tablet[i] == '/' {
			e.Table, e.Tablet = e.Tablet[:i], e.Tablet[i+1:]
			return
		}
	}
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	n := *h
	n.attrs = append([]slog.Attr(nil), h.attrs...)
	for _, a := range as {
		if h.group != "" {
			a.Key = h.group + a.Key
		}
		n.attrs = append(n.attrs, a)
	}
	n.next = h.next.WithAttrs(as)
	return &n
}

func (h *handler) WithGroup(name string) slog.Handler {
	n := *h
	n.group = h.group + name + "."
	n.next = h.next.WithGroup(name)
	return &n
}
