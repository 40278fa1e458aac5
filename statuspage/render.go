package statuspage

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Drawing a heatmap: the rows are the newest column's cells (the current
// tablets and their hot sub-ranges), merged to at most gridRows; every
// older column is laid onto those rows, each of its cells spreading its
// value evenly over the rows it overlaps (keys have no distance, so
// "evenly" is by row). Rows are equally tall: the y axis is in key order,
// not to scale.

const (
	gridRows   = 96
	labelWidth = 170 // px left of the map for key labels
	axisHeight = 26  // px below it for times
	mapWidth   = 720 // px the columns share
	mapHeight  = 480 // px the rows share
	keyLabel   = 22  // characters of a key shown on the axis
)

// Measure is what the heatmap colours by.
type Measure string

// The measures a heatmap can show.
const (
	Reads  Measure = "reads"
	Writes Measure = "writes"
	Bytes  Measure = "bytes"
)

func parseMeasure(s string) Measure {
	switch Measure(s) {
	case Writes, Bytes:
		return Measure(s)
	}
	return Reads
}

func (m Measure) of(c Cell) float64 {
	switch m {
	case Writes:
		return float64(c.Writes)
	case Bytes:
		return float64(c.Bytes)
	}
	return float64(c.Reads)
}

func (m Measure) unit() string {
	switch m {
	case Writes:
		return "writes/s"
	case Bytes:
		return "bytes/s"
	}
	return "reads/s"
}

// svgRect is one drawn cell (or run of equal cells of a column).
type svgRect struct {
	X, Y, W, H  int
	Fill        string
	Start, End  string // display keys of the range
	Value       string
	Time        string
	Title       string
	Measurement float64
}

type svgLabel struct {
	X, Y int
	Text string
}

// heatmapView is what the template draws.
type heatmapView struct {
	Width, Height int
	MapX, MapW    int
	MapH          int
	Rects         []svgRect
	KeyLabels     []svgLabel
	TimeLabels    []svgLabel
	Max           string
	Unit          string
	Columns, Rows int
	From, To      string
	Legend        []string // gradient stops
}

// layout builds the view of cols (oldest first) by m; nil when there is
// nothing to draw.
func layout(cols []Column, m Measure) *heatmapView {
	if len(cols) == 0 || len(cols[len(cols)-1].Cells) == 0 {
		return nil
	}
	rows := mergeCells(append([]Cell(nil), cols[len(cols)-1].Cells...), gridRows)
	grid := make([][]float64, len(cols)) // grid[col][row]
	for i, c := range cols {
		grid[i] = spread(c.Cells, rows, m)
	}
	peak := 0.0
	for _, g := range grid {
		for _, v := range g {
			peak = max(peak, v)
		}
	}
	cw := max(1, min(16, mapWidth/len(cols)))
	rh := max(3, min(28, mapHeight/len(rows)))
	v := &heatmapView{
		MapX: labelWidth, MapW: cw * len(cols), MapH: rh * len(rows),
		Unit: m.unit(), Max: number(peak), Columns: len(cols), Rows: len(rows),
		From: cols[0].At.Format(time.TimeOnly), To: cols[len(cols)-1].At.Format(time.TimeOnly),
		Legend: palette[:],
	}
	v.Width, v.Height = v.MapX+v.MapW+8, v.MapH+axisHeight
	for i, c := range cols {
		at := c.At.Format(time.TimeOnly)
		for r := 0; r < len(rows); {
			// One rect for a run of equal values (cold stretches mostly).
			e := r + 1
			for e < len(rows) && grid[i][e] == grid[i][r] {
				e++
			}
			val := grid[i][r]
			start, end := keyText(rows[r].Start, "-inf"), keyText(rows[e-1].End, "+inf")
			v.Rects = append(v.Rects, svgRect{
				X: v.MapX + i*cw, Y: r * rh, W: cw, H: (e - r) * rh,
				Fill: colour(val, peak), Start: start, End: end, Value: strconv.FormatFloat(val, 'g', 6, 64), Time: at,
				Title:       fmt.Sprintf("[%s, %s) %s %s at %s", start, end, number(val), m.unit(), at),
				Measurement: val,
			})
			r = e
		}
	}
	step := max(1, (len(rows)+15)/16) // at most 16 key labels
	for r := 0; r < len(rows); r += step {
		v.KeyLabels = append(v.KeyLabels, svgLabel{X: v.MapX - 4, Y: r*rh + min(rh, 12), Text: truncate(keyText(rows[r].Start, "-inf"), keyLabel)})
	}
	tstep := max(1, (len(cols)+5)/6) // at most 6 time labels
	for i := 0; i < len(cols); i += tstep {
		v.TimeLabels = append(v.TimeLabels, svgLabel{X: v.MapX + i*cw, Y: v.MapH + 16, Text: cols[i].At.Format(time.TimeOnly)})
	}
	return v
}

// spread lays cells onto rows: each cell's value split evenly over the
// rows its range overlaps. Cells outside the rows' span go to the nearest
// row.
func spread(cells []Cell, rows []Cell, m Measure) []float64 {
	out := make([]float64, len(rows))
	// rowOf: the last row starting at or before k.
	rowOf := func(k string) int {
		i := sort.Search(len(rows), func(i int) bool { return rows[i].Start > k })
		return max(0, i-1)
	}
	for _, c := range cells {
		val := m.of(c)
		if val == 0 {
			continue
		}
		first := rowOf(c.Start)
		last := len(rows) - 1
		if c.End != "" {
			// The last row starting before End.
			last = max(first, sort.Search(len(rows), func(i int) bool { return rows[i].Start >= c.End })-1)
		}
		share := val / float64(last-first+1)
		for r := first; r <= last; r++ {
			out[r] += share
		}
	}
	return out
}

// palette runs from cold to hot (matplotlib's "inferno", 9 stops).
var palette = [...]string{"#000004", "#1b0c41", "#4a0c6b", "#781c6d", "#a52c60", "#cf4446", "#ed6925", "#fb9b06", "#fcffa4"}

// colour maps v in [0, peak] onto the palette, on a square-root scale so
// that warm ranges stand out next to a very hot one.
func colour(v, peak float64) string {
	if peak <= 0 || v <= 0 {
		return "#15151d" // no load: a little off the palette's black
	}
	t := math.Sqrt(v / peak)
	x := t * float64(len(palette)-1)
	i := min(int(x), len(palette)-2)
	return mix(palette[i], palette[i+1], x-float64(i))
}

func mix(a, b string, f float64) string {
	pa, pb := hexRGB(a), hexRGB(b)
	var out [3]int
	for i := range out {
		out[i] = int(math.Round(float64(pa[i]) + (float64(pb[i])-float64(pa[i]))*f))
	}
	return fmt.Sprintf("#%02x%02x%02x", out[0], out[1], out[2])
}

func hexRGB(s string) [3]int {
	var rgb [3]int
	for i := range rgb {
		n, _ := strconv.ParseUint(s[1+2*i:3+2*i], 16, 8)
		rgb[i] = int(n)
	}
	return rgb
}

// keyText shows a row key: printable ASCII as is, other bytes as \xNN;
// empty as empty (what the bound means, -inf or +inf).
func keyText(k, empty string) string {
	if k == "" {
		return empty
	}
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c >= 0x20 && c < 0x7f && c != '\\' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "\\x%02x", c)
	}
	return b.String()
}

// truncate cuts s to n characters, marking the cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// number prints a rate or size compactly: 0, 12.5, 3.4k, 12M.
func number(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 1e9:
		return strconv.FormatFloat(v/1e9, 'f', 1, 64) + "G"
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 1, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + "k"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// bytesText prints a size in binary units: 0 B, 12.0 KiB, 3.4 GiB.
func bytesText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
