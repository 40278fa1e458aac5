package main

import (
	"strings"
	"testing"
	"time"
)

func TestLoadFlags(t *testing.T) {
	for _, cmd := range []string{"tabletserver", "dev"} {
		_, v := settingsFor(t, cmd)
		ld, err := readLoadSettings(v)
		if err != nil || ld.window != 10*time.Second || ld.rps != 2000 || ld.windows != 3 || ld.cooldown != 5*time.Minute {
			t.Fatalf("%s defaults: %+v, %v", cmd, ld, err)
		}
		_, v = settingsFor(t, cmd, "--hot-split-rps", "0", "--load-window", "1s", "--hot-split-windows", "2", "--hot-split-cooldown", "0")
		ld, err = readLoadSettings(v)
		// Options read 0 as "the default": off and no cooldown must not be 0.
		if err != nil || ld.rps >= 0 || ld.window != time.Second || ld.windows != 2 || ld.cooldown <= 0 || ld.cooldown > time.Millisecond {
			t.Fatalf("%s: --hot-split-rps 0 --hot-split-cooldown 0 gave %+v, %v; want rps < 0 (off) and a tiny cooldown", cmd, ld, err)
		}
		for _, bad := range [][]string{{"--load-window", "0s"}, {"--hot-split-windows", "0"}, {"--hot-split-cooldown", "-1s"}} {
			_, v = settingsFor(t, append([]string{cmd}, bad...)...)
			if _, err := readLoadSettings(v); err == nil || !strings.Contains(err.Error(), bad[0]) {
				t.Errorf("%s %v: err %v, want one naming %s", cmd, bad, err, bad[0])
			}
		}
	}
}
