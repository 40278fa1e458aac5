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
