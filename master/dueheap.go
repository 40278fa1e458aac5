package master

import "time"

// dueEntry is a tablet to step again at a time.
type dueEntry struct {
	at  time.Time
	ref tabletRef
}

// dueHeap is a min-heap of dueEntry by time (container/heap). A tablet may
// appear more than once: stepping it early is harmless, it is put back.
type dueHeap []dueEntry

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(dueEntry)) }
func (h *dueHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
