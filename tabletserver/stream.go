package tabletserver

import (
	"sync"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// readHeartbeat is how long a ReadRows stream may go without a message:
// past it the server sends an empty ReadRowsResponse. Clients bound the
// wait for each message of a stream (client.Options.AttemptTimeout, 10s
// by default) to detect a hung server; the heartbeat tells them a
// selective scan that skips many rows is still alive. A variable so that
// tests can shorten it.
var readHeartbeat = 2 * time.Second

// streamSender serializes the sends of one ReadRows stream and sends
// heartbeats while the scan finds nothing to send. Call close before the
// handler returns.
type streamSender struct {
	stream   tabulapb.TabletServer_ReadRowsServer
	interval time.Duration
	stop     chan struct{}
	wg       sync.WaitGroup // the heartbeat goroutine

	// mu serializes stream sends and guards last.
	mu   sync.Mutex
	last time.Time // of the last send
}

func startSender(stream tabulapb.TabletServer_ReadRowsServer, interval time.Duration) *streamSender {
	s := &streamSender{stream: stream, interval: interval, stop: make(chan struct{}), last: time.Now()}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.heartbeats()
	}()
	return s
}

func (s *streamSender) heartbeats() {
	t := time.NewTicker(s.interval / 2)
	defer t.Stop()
	ctx := s.stream.Context()
	for {
		select {
		case <-s.stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.mu.Lock()
		if time.Since(s.last) >= s.interval {
			// An error here ends the stream; the scan's next send sees it.
			_ = s.stream.Send(&tabulapb.ReadRowsResponse{})
			s.last = time.Now()
		}
		s.mu.Unlock()
	}
}

// send sends resp.
func (s *streamSender) send(resp *tabulapb.ReadRowsResponse) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.stream.Send(resp)
	s.last = time.Now()
	return err
}

// close stops the heartbeats and waits for them: no send may happen once
// the handler has returned.
func (s *streamSender) close() {
	close(s.stop)
	s.wg.Wait()
}
