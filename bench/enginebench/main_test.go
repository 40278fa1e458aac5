package main

import (
	"encoding/json"
	"flag"
	"os"
	"testing"
)

// TestMain lets the test binary be its own child process, as the
// enginebench binary is: spawn re-executes it with -child.
func TestMain(m *testing.M) {
	flag.Parse()
	if *flagChild != "" {
		*flagReads = 100 // the child of a test reads a few keys only
		c, err := configFromFlags()
		check(err)
		var j job
		check(json.Unmarshal([]byte(*flagChild), &j))
		check(runChild(j, *flagDir+"/child", c))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestParseSizesRefusesARepeatedValueSize: the report names its rows by
// value size, so two key counts of one size would be merged silently.
func TestParseSizesRefusesARepeatedValueSize(t *testing.T) {
	if _, err := parseSizes("100:1000000,100:4000000"); err == nil {
		t.Fatal("value size 100 twice accepted")
	}
	got, err := parseSizes("100:1000000,1000:200000")
	if err != nil || len(got) != 2 || got[1] != (sizeCount{size: 1000, count: 200000}) {
		t.Fatalf("parseSizes = %v, %v", got, err)
	}
}
