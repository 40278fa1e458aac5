package sstable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/bits-and-blooms/bloom/v3"
)

// randomFilterEntries returns n distinct entries of 1 to 40 random bytes.
func randomFilterEntries(rng *rand.Rand, n int) [][]byte {
	seen := make(map[string]bool, n)
	out := make([][]byte, 0, n)
	for len(out) < n {
		e := make([]byte, 1+rng.Intn(40))
		rng.Read(e)
		if !seen[string(e)] {
			seen[string(e)] = true
			out = append(out, e)
		}
	}
	return out
}

// TestFilterHasNoFalseNegatives builds filters of random entries, sizes and
// rates, alternating rows and columns as the writer does, and checks that
// every entry added is reported, after an encode and decode.
func TestFilterHasNoFalseNegatives(t *testing.T) {
	rng := testRand(t)
	for round := range 50 {
		n := 1 + rng.Intn(3000)
		fp := []float64{0.5, 0.1, 0.01, 0.001, 1e-6}[rng.Intn(5)]
		entries := randomFilterEntries(rng, n)
		var b filterBuilder
		for i, e := range entries {
			if i%3 == 2 {
				b.addColumn(e)
				b.addColumn(e) // a repeat is deduplicated, not lost
			} else {
				b.addRow(e)
			}
		}
		f, err := decodeFilter(b.build(fp), formatVersion)
		if err != nil {
			t.Fatalf("round %d: decodeFilter: %v", round, err)
		}
		for _, e := range entries {
			if !f.mayContain(e) {
				t.Fatalf("round %d (%d entries, rate %v): entry %x ruled out", round, n, fp, e)
			}
		}
	}
}

// TestEmptyFilterRulesOutEverything: a file whose keys are no cell keys
// has a filter with no entries.
func TestEmptyFilterRulesOutEverything(t *testing.T) {
	var b filterBuilder
	f, err := decodeFilter(b.build(0.01), formatVersion)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if f.mayContain(fmt.Appendf(nil, "e%d", i)) {
			t.Fatalf("an empty filter let e%d through", i)
		}
	}
}

// libraryFilterBlock encodes a version 1 filter block of the entries, as
// the version 1 writer did.
func libraryFilterBlock(entries [][]byte, fp float64) []byte {
	f := bloom.NewWithEstimates(uint(max(len(entries), 1)), fp)
	for _, e := range entries {
		f.Add(e)
	}
	words := f.BitSet().Words()
	out := make([]byte, filterHeaderLen, filterHeaderLen+8*len(words))
	binary.LittleEndian.PutUint64(out, uint64(f.Cap()))
	binary.LittleEndian.PutUint32(out[8:], uint32(f.K()))
	for _, w := range words {
		out = binary.LittleEndian.AppendUint64(out, w)
	}
	return out
}

// TestFilterFalsePositivesNotAboveVersion1 checks that the version 2 filter
// is as good as the version 1 (library) filter it replaces, at the rates
// families use: at least as many bits and as many hash functions for the
// same entries, and a measured false-positive rate within statistical noise
// of a standard bloom filter's, (1 - e^(-kn/m))^k. The inputs are fixed,
// so the counts are too; with half a million probes one standard deviation
// of the count is about 4.5% at the 0.001 rate, and the bound allows 20%.
func TestFilterFalsePositivesNotAboveVersion1(t *testing.T) {
	const n, probes = 50_000, 500_000
	entries := make([][]byte, n)
	for i := range entries {
		entries[i] = fmt.Appendf(nil, "user%010d\x00\x01", i*7)
	}
	for _, fp := range []float64{0.01, 0.001} {
		var b filterBuilder
		for _, e := range entries {
			b.addRow(e)
		}
		block2, block1 := b.build(fp), libraryFilterBlock(entries, fp)
		m2, k2 := binary.LittleEndian.Uint64(block2), binary.LittleEndian.Uint32(block2[8:])
		m1, k1 := binary.LittleEndian.Uint64(block1), binary.LittleEndian.Uint32(block1[8:])
		if m2 < m1 || k2 != k1 {
			t.Errorf("target %v: version 2 has %d bits and %d hashes, version 1 %d and %d", fp, m2, k2, m1, k1)
		}
		v2, err := decodeFilter(block2, 2)
		if err != nil {
			t.Fatal(err)
		}
		v1, err := decodeFilter(block1, 1)
		if err != nil {
			t.Fatal(err)
		}
		var fp1, fp2 int
		for i := range probes {
			p := fmt.Appendf(nil, "user%010d\x00\x01", n*7+i)
			if v1.mayContain(p) {
				fp1++
			}
			if v2.mayContain(p) {
				fp2++
			}
		}
		theory := math.Pow(1-math.Exp(-float64(k2)*n/float64(m2)), float64(k2))
		r1, r2 := float64(fp1)/probes, float64(fp2)/probes
		t.Logf("target %v: version 1 %.5f, version 2 %.5f, standard filter of version 2's size %.5f", fp, r1, r2, theory)
		if r2 > 1.2*theory {
			t.Errorf("target %v: version 2 false-positive rate %.5f, a standard filter's %.5f", fp, r2, theory)
		}
	}
}

// TestVersion1FilterStillAnswers decodes a version 1 block as version 1
// (the library's hashing) and checks it answers as the library does.
func TestVersion1FilterStillAnswers(t *testing.T) {
	rng := testRand(t)
	entries := randomFilterEntries(rng, 2000)
	block := libraryFilterBlock(entries[:1000], 0.01)
	lib := bloom.NewWithEstimates(1000, 0.01)
	for _, e := range entries[:1000] {
		lib.Add(e)
	}
	f, err := decodeFilter(block, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range entries {
		if got, want := f.mayContain(e), lib.Test(e); got != want {
			t.Fatalf("entry %d: mayContain %v, library %v", i, got, want)
		}
	}
}

func TestFooterVersions(t *testing.T) {
	for v := range uint32(5) {
		b := footer{version: v}.encode()
		_, err := decodeFooter(b)
		if ok := v >= minFormatVersion && v <= formatVersion; ok != (err == nil) {
			t.Errorf("version %d: decodeFooter = %v", v, err)
		}
	}
	var b filterBuilder
	b.addRow([]byte("r"))
	if _, err := decodeFilter(b.build(0.01), formatVersion+1); err == nil {
		t.Error("decodeFilter accepted an unknown version")
	}
}

// FuzzFilterDecode feeds arbitrary bytes to the filter decoder of every
// version: it must reject them or answer probes without panicking, and a
// filter the writer built must report its entries.
func FuzzFilterDecode(f *testing.F) {
	var b filterBuilder
	for _, e := range []string{"a", "bb", "row-1\x00\x01"} {
		b.addRow([]byte(e))
	}
	good := b.build(0.01)
	f.Add(good, uint32(2), []byte("a"))
	f.Add(good, uint32(1), []byte("bb"))
	f.Add(libraryFilterBlock([][]byte{[]byte("a")}, 0.01), uint32(1), []byte("a"))
	f.Add([]byte{}, uint32(2), []byte(nil))
	f.Add(make([]byte, filterHeaderLen+8), uint32(2), []byte("x"))
	f.Fuzz(func(t *testing.T, data []byte, version uint32, probe []byte) {
		flt, err := decodeFilter(data, version)
		if err != nil {
			return
		}
		flt.mayContain(probe)
		if bytes.Equal(data, good) && version == 2 && !flt.mayContain([]byte("row-1\x00\x01")) {
			t.Fatal("the built filter lost an entry")
		}
	})
}

// TestFilterMemSize: a decoded filter of either version reports the bits it
// holds (the block's words) and a little more, for the reader's memory
// accounting.
func TestFilterMemSize(t *testing.T) {
	entries := randomFilterEntries(testRand(t), 5000)
	var b filterBuilder
	for _, e := range entries {
		b.addRow(e)
	}
	for version, block := range map[uint32][]byte{1: libraryFilterBlock(entries, 0.01), 2: b.build(0.01)} {
		f, err := decodeFilter(block, version)
		if err != nil {
			t.Fatal(err)
		}
		bits := int64(len(block) - filterHeaderLen)
		if n := f.memSize(); n < bits || n > bits+256 {
			t.Errorf("version %d: memSize %d for %d bytes of bits", version, n, bits)
		}
	}
}
