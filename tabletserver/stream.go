package tabletserver

import (
	"time"

	"github.com/tabuladb/tabula/api/convert"
	"github.com/tabuladb/tabula/api/tabulapb"
)

// readHeartbeat is how long a ReadRows stream may go without a message
// while its scan works: past it the server sends an empty
// ReadRowsResponse. Clients bound the wait for each message of a stream
// (client.Options.AttemptTimeout, 10s by default) to detect a hung server;
// the heartbeat tells them a selective scan that skips many rows is still
// making progress.
const readHeartbeat = 2 * time.Second

// heartbeatDue reports whether a stream whose last message went out at
// last is due a heartbeat. The scan asks it every few rows it passes
// (tablet.ReadOptions.Progress). A variable so that tests can force
// heartbeats (or none) without depending on how fast a scan runs.
var heartbeatDue = func(last time.Time) bool { return time.Since(last) >= readHeartbeat }

// streamSender sends the messages of one ReadRows stream, all from the
// handler's goroutine: batches of rows, and heartbeats while the scan
// finds nothing to send. Heartbeats come from the scan's progress hook,
// not from a timer, so they mean that the scan is moving: a scan stuck on
// a hung disk sends none, and the client's attempt timeout fires as it
// should. Not safe for concurrent use.
type streamSender struct {
	stream tabulapb.TabletServer_ReadRowsServer
	last   time.Time // of the last send
	err    error     // of a failed heartbeat: the stream is broken
}

func newSender(stream tabulapb.TabletServer_ReadRowsServer) *streamSender {
	return &streamSender{stream: stream, last: time.Now()}
}

// send sends resp.
func (s *streamSender) send(resp *tabulapb.ReadRowsResponse) error {
	if s.err != nil {
		return s.err
	}
	err := s.stream.Send(resp)
	s.last = time.Now()
	return err
}

// sendRows sends a message of rows already encoded (convert.RowBatch):
// the server's codec (convert.Codec) writes its bytes as they are.
func (s *streamSender) sendRows(m *convert.RowsMessage) error {
	if s.err != nil {
		return s.err
	}
	err := s.stream.SendMsg(m)
	s.last = time.Now()
	return err
}

// progress is the scan's progress hook: it sends an empty message when a
// heartbeat is due. A failed send is kept in err and returned by the
// next send; the scan itself stops soon after, as the broken stream
// cancels its context.
func (s *streamSender) progress() {
	if s.err != nil || !heartbeatDue(s.last) {
		return
	}
	s.err = s.stream.Send(&tabulapb.ReadRowsResponse{})
	s.last = time.Now()
}
