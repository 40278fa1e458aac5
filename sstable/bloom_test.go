package sstable

import (
	"strconv"
	"testing"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
)

// TestBloomFalsePositiveRate checks that rows and columns never in the file
// are mostly ruled out, near the configured rate, and that every row and
// column in it is reported.
func TestBloomFalsePositiveRate(t *testing.T) {
	const rows, cols, probes = 2000, 3, 20000
	var entries []kv
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			k := cell.Key{Row: []byte("row" + strconv.Itoa(r)), Qualifier: []byte("q" + strconv.Itoa(c)), Timestamp: 5, Seq: 1, Kind: cell.KindSet}
			entries = append(entries, kv{key: cell.AppendKey(nil, k), value: []byte("v"), k: k})
		}
	}
	sortEntries(entries)
	for _, tc := range []struct {
		bloom families.Bloom
		fp    float64
	}{
		{families.BloomRow, 0},
		{families.BloomRowColumn, 0},
		{families.BloomRow, 0.001},
	} {
		path, _ := writeTable(t, t.TempDir(), WriterOptions{Bloom: tc.bloom, BloomFalsePositive: tc.fp}, entries)
		r := openTable(t, path, ReaderOptions{})
		checkBloomNoFalseNegatives(t, r, entries)
		target := tc.fp
		if target == 0 {
			target = 0.01
		}
		var rowFP, colFP int
		for i := 0; i < probes; i++ {
			if r.MayContainRow(cell.EncodeRow([]byte("absent" + strconv.Itoa(i)))) {
				rowFP++
			}
			// A present row with an absent column.
			row := []byte("row" + strconv.Itoa(i%rows))
			if r.MayContainColumn(cell.EncodeColumn(row, []byte("absent"+strconv.Itoa(i)))) {
				colFP++
			}
		}
		rate := float64(rowFP) / probes
		t.Logf("%v fp=%v: row false-positive rate %.4f, column %.4f", tc.bloom, target, rate, float64(colFP)/probes)
		if rate > 3*target {
			t.Errorf("%v: row false-positive rate %.4f, configured %.4f", tc.bloom, rate, target)
		}
		switch tc.bloom {
		case families.BloomRowColumn:
			if rate := float64(colFP) / probes; rate > 3*target {
				t.Errorf("row+column: column false-positive rate %.4f, configured %.4f", rate, target)
			}
		case families.BloomRow:
			if colFP != probes {
				t.Errorf("row filter ruled out %d columns of present rows", probes-colFP)
			}
		}
	}
}

func TestNoFilterMayContainEverything(t *testing.T) {
	entries := randomEntries(testRand(t), 50, 10)
	path, _ := writeTable(t, t.TempDir(), WriterOptions{}, entries)
	r := openTable(t, path, ReaderOptions{})
	if !r.MayContainRow(cell.EncodeRow([]byte("absent"))) || !r.MayContainColumn(cell.EncodeColumn([]byte("absent"), nil)) {
		t.Error("a file without a filter ruled out a row or column")
	}
}

func TestFilterDecodeRejectsBadHeaders(t *testing.T) {
	fb := &filterBuilder{}
	fb.addRow([]byte("a"))
	good := fb.build(0.01)
	if _, err := decodeFilter(good, formatVersion); err != nil {
		t.Fatalf("decodeFilter(good, formatVersion) = %v", err)
	}
	cases := map[string][]byte{
		"empty":      nil,
		"short":      good[:filterHeaderLen-1],
		"ragged":     good[:len(good)-1],
		"no words":   good[:filterHeaderLen],
		"zero k":     append(append(append([]byte(nil), good[:8]...), 0, 0, 0, 0), good[12:]...),
		"huge m":     append([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, good[8:]...),
		"many words": append(append([]byte(nil), good...), make([]byte, 8)...),
	}
	for name, b := range cases {
		if _, err := decodeFilter(b, formatVersion); err == nil {
			t.Errorf("%s: decodeFilter accepted a bad filter", name)
		}
	}
}
