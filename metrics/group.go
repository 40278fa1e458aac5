package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Group is a Registerer that remembers what was registered through it, so
// that a component that stops can take all its series back (Close) and a
// new incarnation in the same process (a tablet server restarted by a
// test or a dev cluster) can register them again without a duplicate
// registration error.
type Group struct {
	r  prometheus.Registerer
	mu sync.Mutex
	cs []prometheus.Collector
}

// Track returns a Group registering with r; nil r gives nil (metrics off),
// on which every method is a no-op.
func Track(r prometheus.Registerer) *Group {
	if r == nil {
		return nil
	}
	return &Group{r: r}
}

// Register registers c with the underlying registerer and remembers it.
func (g *Group) Register(c prometheus.Collector) error {
	if g == nil {
		return nil
	}
	if err := g.r.Register(c); err != nil {
		return err
	}
	g.mu.Lock()
	g.cs = append(g.cs, c)
	g.mu.Unlock()
	return nil
}

// MustRegister registers cs and panics on an error (a programming error:
// two series of one name).
func (g *Group) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := g.Register(c); err != nil {
			panic(err)
		}
	}
}

// Unregister unregisters c.
func (g *Group) Unregister(c prometheus.Collector) bool {
	if g == nil {
		return false
	}
	g.mu.Lock()
	for i, x := range g.cs {
		if x == c {
			g.cs = append(g.cs[:i], g.cs[i+1:]...)
			break
		}
	}
	g.mu.Unlock()
	return g.r.Unregister(c)
}

// Close unregisters everything registered through g.
func (g *Group) Close() {
	if g == nil {
		return
	}
	g.mu.Lock()
	cs := g.cs
	g.cs = nil
	g.mu.Unlock()
	for _, c := range cs {
		g.r.Unregister(c)
	}
}
