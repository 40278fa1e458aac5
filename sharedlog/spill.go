package sharedlog

import (
	"fmt"
	"os"
)

// spillRefBytes is what the cache counts against its budget for a record
// it spilled: the record's place in the spill file, kept in memory.
const spillRefBytes = 64

// spillFile holds the records of one foreign log that did not fit in the
// cache's budget, so that the log is still read once: a local temporary
// file, unlinked at once (it goes with the process whatever happens),
// appended to while the log is read and read back by the replays of the
// tablets whose records it holds. It is used under its cachedLog's mu,
// and closed once the log is dropped and no replay uses it.
type spillFile struct {
	f    *os.File
	size int64
}

// newSpillFile creates a spill file in dir (empty: the system's temporary
// folder), creating dir if need be.
func newSpillFile(dir string) (*spillFile, error) {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("sharedlog: spilling a foreign log: %w", err)
		}
	}
	f, err := os.CreateTemp(dir, "tabula-sharedlog-spill-*")
	if err != nil {
		return nil, fmt.Errorf("sharedlog: spilling a foreign log: %w", err)
	}
	_ = os.Remove(f.Name())
	return &spillFile{f: f}, nil
}

// add appends p and returns its offset.
func (s *spillFile) add(p []byte) (int64, error) {
	off := s.size
	if _, err := s.f.WriteAt(p, off); err != nil {
		return 0, fmt.Errorf("sharedlog: spilling a foreign log: %w", err)
	}
	s.size += int64(len(p))
	return off, nil
}

// read reads n bytes at off into buf (grown if need be) and returns them.
func (s *spillFile) read(buf []byte, off int64, n int) ([]byte, error) {
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := s.f.ReadAt(buf, off); err != nil {
		return nil, fmt.Errorf("sharedlog: reading back a spilled record: %w", err)
	}
	return buf, nil
}

func (s *spillFile) close() { _ = s.f.Close() }
