package master

import (
	"context"
	"sync"
	"time"

	"github.com/tabuladb/tabula/meta"
)

// campaignLoop campaigns until Close; each won election runs one term.
func (m *Master) campaignLoop() {
	backoff := 100 * time.Millisecond
	for m.ctx.Err() == nil {
		if err := m.campaignOnce(); err != nil && m.ctx.Err() == nil {
			m.log.Warn("campaign failed; retrying", "err", err, "backoff", backoff)
			select {
			case <-time.After(backoff):
			case <-m.ctx.Done():
			}
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
	}
}

// campaignOnce opens a session, waits to be elected and serves one term,
// which ends when the session is lost or the master closes.
func (m *Master) campaignOnce() error {
	// The session outlives m.ctx on purpose: Close must still be able to
	// revoke its lease so that a standby takes over at once.
	sess, err := meta.NewSession(context.Background(), m.cli, int(m.opts.SessionTTL/time.Second))
	if err != nil {
		return err
	}
	defer sess.Close()
	m.mu.Lock()
	m.mu.session = sess
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.mu.session = nil
		m.mu.Unlock()
	}()

	var wg sync.WaitGroup
	defer wg.Wait()
	cctx, ccancel := context.WithCancel(m.ctx)
	defer ccancel()
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-sess.Done():
		case <-cctx.Done():
		}
		ccancel()
	}()

	// The keys are etcd's concurrency.Election's, so masters of older
	// releases campaign in the same election.
	el := meta.NewElection(sess, m.layout.ElectionPrefix())
	if err := el.Campaign(cctx, m.opts.AdvertiseAddr); err != nil {
		return err
	}
	term := &leadership{key: el.Key(), rev: el.Rev()}
	var lcancel context.CancelFunc
	term.ctx, lcancel = context.WithCancel(cctx)
	term.assign = newAssigner(m, term)
	m.mu.Lock()
	m.mu.leader = term
	m.mu.Unlock()
	m.log.Info("elected leader", "event", "leader", "key", term.key)

	// termWG tracks the term's loops; the term ends only after they stop.
	var termWG sync.WaitGroup
	termWG.Add(1)
	go func() {
		defer termWG.Done()
		term.assign.run()
	}()
	termWG.Add(1)
	go func() {
		defer termWG.Done()
		m.repairAssignments(term)
	}()
	termWG.Add(1)
	go func() {
		defer termWG.Done()
		m.abortCreatingSnapshots(term)
	}()
	termLoop(&termWG, term, m.opts.LoadInterval, nil, m.loadRound)
	if !m.opts.Merge.Disabled {
		termLoop(&termWG, term, m.opts.Merge.Interval, nil, func(ctx context.Context) { m.autoMergeTick(ctx, term) })
	}
	termLoop(&termWG, term, m.opts.BalanceInterval, m.bal.kick, func(ctx context.Context) { m.balanceTick(ctx, term) })
	if m.opts.StorageRoot != "" {
		termLoop(&termWG, term, m.opts.GCInterval, nil, func(ctx context.Context) { m.gcTick(ctx, term) })
	}
	if m.opts.BackupRunner != nil {
		termLoop(&termWG, term, m.opts.BackupScheduleInterval, nil, func(ctx context.Context) { m.backupScheduleTick(ctx, term) })
	}
	<-cctx.Done() // session lost or master closing

	m.mu.Lock()
	m.mu.leader = nil
	m.mu.Unlock()
	lcancel()
	termWG.Wait()
	if m.ctx.Err() != nil {
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := el.Resign(rctx); err != nil {
			m.log.Warn("resigning", "err", err)
		}
		m.log.Info("resigned leadership")
		return nil
	}
	m.log.Warn("lost leadership (etcd session ended); campaigning again", "event", "leader")
	return nil
}
