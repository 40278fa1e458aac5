package tablet

import (
	"sync"

	"github.com/tabuladb/tabula/sstable"
)

// writerSet holds the SSTable writers of the flushes and compactions in
// flight, so that Stats can report the memory they hold (a compaction's
// bloom builder is the largest allocation it makes).
type writerSet struct {
	mu sync.Mutex
	ws map[*sstable.Writer]struct{}
}

func (s *writerSet) add(w *sstable.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ws == nil {
		s.ws = map[*sstable.Writer]struct{}{}
	}
	s.ws[w] = struct{}{}
}

func (s *writerSet) remove(w *sstable.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ws, w)
}

// bytes sums what the writers hold (sstable.Writer.MemoryBytes).
func (s *writerSet) bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for w := range s.ws {
		n += w.MemoryBytes()
	}
	return n
}
