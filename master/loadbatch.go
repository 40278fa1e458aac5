package master

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// The loads of one server travel in batches (docs/OWNERSHIP.md "Loads in
// batches"): each load joins its server's queue, and up to
// maxBatchesPerServer LoadTablets calls per server each carry what queued
// meanwhile, up to maxLoadBatch tablets — a group commit: the first load
// after a quiet spell goes out alone and at once, and a dead server's
// 10,000 tablets go out in calls of many, each tablet's answer coming
// back as soon as its server has it. A server that answers UNIMPLEMENTED
// (it predates LoadTablets) gets LoadTablet per tablet, and the batch
// form is tried again after legacyRetry.
const (
	maxLoadBatch        = 64
	maxBatchesPerServer = 2
	legacyRetry         = time.Minute
)

// loadQueue is one server's queue of loads.
type loadQueue struct {
	mu      sync.Mutex
	pending []*queuedLoad
	running int       // LoadTablets calls in flight or about to be
	legacy  time.Time // until then: LoadTablet per tablet
}

type queuedLoad struct {
	req  *tabulapb.LoadTabletRequest
	done chan error // buffered: the answer never waits for its reader
}

// loadQueues holds the term's queues by server address.
type loadQueues struct {
	mu sync.Mutex
	m  map[string]*loadQueue
}

func (l *loadQueues) get(addr string) *loadQueue {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]*loadQueue{}
	}
	q := l.m[addr]
	if q == nil {
		q = &loadQueue{}
		l.m[addr] = q
	}
	return q
}

// load asks the server at addr to load req's tablet, in a batch with the
// other loads queued for it, and returns its answer for that tablet.
func (a *assigner) load(ctx context.Context, addr string, req *tabulapb.LoadTabletRequest) error {
	q := a.queues.get(addr)
	w := &queuedLoad{req: req, done: make(chan error, 1)}
	q.mu.Lock()
	if time.Now().Before(q.legacy) {
		q.mu.Unlock()
		return a.loadOne(ctx, addr, req)
	}
	q.pending = append(q.pending, w)
	start := q.running < maxBatchesPerServer
	if start {
		q.running++
	}
	q.mu.Unlock()
	if start {
		a.wg.Go(func() { a.sendBatches(ctx, addr, q) })
	}
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sendBatches sends q's queued loads in calls of up to maxLoadBatch until
// the queue is empty.
func (a *assigner) sendBatches(ctx context.Context, addr string, q *loadQueue) {
	for {
		q.mu.Lock()
		n := min(len(q.pending), maxLoadBatch)
		if n == 0 {
			q.running--
			q.mu.Unlock()
			return
		}
		batch := q.pending[:n:n]
		q.pending = q.pending[n:]
		q.mu.Unlock()
		if err := a.loadBatch(ctx, addr, batch); status.Code(err) == codes.Unimplemented {
			q.mu.Lock()
			q.legacy = time.Now().Add(legacyRetry)
			q.mu.Unlock()
			for _, w := range batch {
				a.wg.Go(func() { w.done <- a.loadOne(ctx, addr, w.req) })
			}
		}
	}
}

// loadBatch sends batch in one LoadTablets call and answers each load as
// its answer arrives; a load the call ends without answering gets the
// call's error. It returns UNIMPLEMENTED, answering none, when the
// server predates LoadTablets.
func (a *assigner) loadBatch(ctx context.Context, addr string, batch []*queuedLoad) error {
	answered := make([]bool, len(batch))
	err := a.streamBatch(ctx, addr, batch, func(i int, err error) {
		if i < len(batch) && !answered[i] {
			answered[i] = true
			batch[i].done <- err
		}
	})
	none := true
	for _, ok := range answered {
		none = none && !ok
	}
	if none && status.Code(err) == codes.Unimplemented {
		return err
	}
	if err == nil {
		err = status.Error(codes.Internal, "LoadTablets ended without answering this tablet")
	}
	for i, ok := range answered {
		if !ok {
			batch[i].done <- err
		}
	}
	return nil
}

// streamBatch runs one LoadTablets call, passing each answer to answer.
func (a *assigner) streamBatch(ctx context.Context, addr string, batch []*queuedLoad, answer func(int, error)) error {
	req := &tabulapb.LoadTabletsRequest{Loads: make([]*tabulapb.LoadTabletRequest, len(batch))}
	for i, w := range batch {
		req.Loads[i] = w.req
	}
	return a.loadCall(ctx, addr, func(ctx context.Context, c tabulapb.TabletServerClient) error {
		stream, err := c.LoadTablets(ctx, req)
		if err != nil {
			return err
		}
		for {
			resp, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			var lerr error
			if code := codes.Code(resp.GetCode()); code != codes.OK {
				lerr = status.Error(code, resp.GetMessage())
			}
			answer(int(resp.GetIndex()), lerr)
		}
	})
}

// loadOne is LoadTablet of one tablet, for servers that predate
// LoadTablets.
func (a *assigner) loadOne(ctx context.Context, addr string, req *tabulapb.LoadTabletRequest) error {
	return a.loadCall(ctx, addr, func(ctx context.Context, c tabulapb.TabletServerClient) error {
		_, err := c.LoadTablet(ctx, req)
		return err
	})
}

// loadCall runs call against the server at addr under the load deadline
// (Options.LoadTimeout), at most maxConcurrentLoads calls at once.
func (a *assigner) loadCall(ctx context.Context, addr string, call func(context.Context, tabulapb.TabletServerClient) error) error {
	select {
	case a.sem <- struct{}{}:
		defer func() { <-a.sem }()
	case <-ctx.Done():
		return ctx.Err()
	}
	c, err := a.m.conns.client(addr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, a.m.opts.LoadTimeout)
	defer cancel()
	return call(ctx, c)
}
