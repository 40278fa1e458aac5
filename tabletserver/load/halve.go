package load

import (
	"bytes"
	"slices"
)

// Cut is where the sampled load of some windows is halved.
type Cut struct {
	// Key is the row that starts the right half: rows below it carry Left
	// of the sampled load, rows from it on the rest. Nil when no row
	// strictly inside the range splits the sample (one row, or none).
	Key  []byte
	Left float64
	// Top is the row carrying the largest share of the sampled load and
	// TopShare that share (0..1): a row cannot be split, so when it holds
	// most of the load no cut halves it.
	Top      []byte
	TopShare float64
	// Requests is how many requests the sample stands for (the windows'
	// Sampled summed).
	Requests int64
}

// Halve returns the row that best halves the load the windows sampled
// among the rows in [start, end) (end nil: no end). Each window's keys are
// a uniform sample of its requests, so a key stands for Sampled/len(Keys)
// requests of its window: a busy window weighs more than a quiet one
// however many keys each kept. The cut key is a sampled row strictly above
// start (a cut at start would leave the left half empty), so a split there
// never divides a row and both halves get sampled load.
func Halve(ws []Window, start, end []byte) Cut {
	type row struct {
		key    []byte
		weight float64
	}
	var rows []row
	var cut Cut
	for _, w := range ws {
		if len(w.Keys) == 0 || w.Sampled <= 0 {
			continue
		}
		cut.Requests += w.Sampled
		weight := float64(w.Sampled) / float64(len(w.Keys))
		for _, k := range w.Keys {
			if bytes.Compare(k, start) < 0 || (len(end) > 0 && bytes.Compare(k, end) >= 0) {
				continue // not this tablet's row (a scan may record its requested start)
			}
			rows = append(rows, row{k, weight})
		}
	}
	if len(rows) == 0 {
		return cut
	}
	slices.SortStableFunc(rows, func(a, b row) int { return bytes.Compare(a.key, b.key) })
	// Merge the samples of one row.
	distinct := rows[:1]
	for _, r := range rows[1:] {
		if last := &distinct[len(distinct)-1]; bytes.Equal(last.key, r.key) {
			last.weight += r.weight
		} else {
			distinct = append(distinct, r)
		}
	}
	var total float64
	for _, r := range distinct {
		total += r.weight
		if r.weight > cut.TopShare {
			cut.Top, cut.TopShare = r.key, r.weight
		}
	}
	cut.TopShare /= total
	// The cut before row i leaves rows [0, i) on the left; i starts at 1
	// so the left half is never empty, and row 0 is at or above start, so
	// row i is strictly above it.
	best, below := -1.0, 0.0
	for i := 1; i < len(distinct); i++ {
		below += distinct[i-1].weight
		if d := abs(2*below - total); best < 0 || d < best {
			best, cut.Key, cut.Left = d, distinct[i].key, below/total
		}
	}
	return cut
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
