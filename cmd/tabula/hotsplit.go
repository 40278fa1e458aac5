package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/tabuladb/tabula/tabletserver"
)

// addLoadFlags adds the load window and load-split flags of `tabula
// tabletserver` and `tabula dev` (docs/OPERATIONS.md "Load-based splits").
func addLoadFlags(c *cobra.Command) {
	f := c.Flags()
	f.Duration("load-window", 10*time.Second, "length of the load windows: request rates (ServerStats, load splits) cover the last closed one")
	f.Float64("hot-split-rps", tabletserver.DefaultHotSplitRPS, "a tablet at or above this many requests/s (reads+writes) for --hot-split-windows windows in a row splits where its load is halved; 0 turns load splits off")
	f.Int("hot-split-windows", 3, "consecutive hot load windows that make a tablet split by load")
	f.Duration("hot-split-cooldown", 5*time.Minute, "the children of a load split, and a tablet whose load sits on one row, make no load split for this long (0: no cooldown)")
}

// loadSettings are the load flags as tabletserver.Options wants them.
type loadSettings struct {
	window, cooldown time.Duration
	rps              float64
	windows          int
}

func readLoadSettings(v *viper.Viper) (loadSettings, error) {
	s := loadSettings{
		window: v.GetDuration("load-window"), cooldown: v.GetDuration("hot-split-cooldown"),
		rps: v.GetFloat64("hot-split-rps"), windows: v.GetInt("hot-split-windows"),
	}
	switch {
	case s.window <= 0:
		return s, fmt.Errorf("--load-window %s: give a positive duration such as 10s (rates are measured over it)", s.window)
	case s.windows < 1:
		return s, fmt.Errorf("--hot-split-windows %d: give 1 or more", s.windows)
	case s.cooldown < 0:
		return s, fmt.Errorf("--hot-split-cooldown %s: give 0 or a positive duration", s.cooldown)
	}
	if s.rps <= 0 {
		s.rps = -1 // off; 0 would mean the default in Options
	}
	if s.cooldown == 0 {
		s.cooldown = time.Nanosecond // none; 0 would mean the default in Options
	}
	return s, nil
}
