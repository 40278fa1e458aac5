package wal

// The SyncBuffered flusher. Write acknowledges a record once it is in buf;
// this goroutine hands buf to the file whenever it holds records and no
// round runs, so a write(2) starts as soon as the previous one returns and
// every record that arrived meanwhile shares it (pebble's LogWriter
// flushLoop works the same way). No timer: an idle flusher sleeps on wake
// until a Write signals it.

// flushLoop runs rounds (without fsync) while records are buffered, until
// the log is closed or poisoned. Close drains what is left itself.
func (l *Log) flushLoop() {
	defer l.wg.Done()
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		for l.err == nil && !l.closed && (len(l.buf) == 0 || l.busy) {
			l.flusherIdle = true
			l.wake.Wait()
		}
		l.flusherIdle = false
		if l.err != nil || l.closed {
			return
		}
		// A failure poisons the log: every later Write and Wait returns
		// it, and the loop ends on the next turn.
		_ = l.roundLocked(false, false)
	}
}

// kickLocked wakes the flusher if it sleeps. Called with mu held after
// records were added to buf or a round ended.
func (l *Log) kickLocked() {
	if l.flusherIdle {
		l.flusherIdle = false
		l.wake.Signal()
	}
}

// waitRoomLocked blocks, in SyncBuffered, while the bytes accepted but not
// yet handed to the operating system (buffered, or in the running round's
// write) reach Options.BufferSize: that bounds what a process crash can
// lose. It returns early if the log is poisoned or closed. Called with mu
// held.
func (l *Log) waitRoomLocked() {
	for l.err == nil && !l.closed && len(l.buf)+l.inflight >= l.opts.BufferSize {
		l.kickLocked()
		l.cond.Wait()
	}
}
