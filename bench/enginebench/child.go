package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime/pprof"
	"syscall"
)

// job is one child process's work: one engine's workloads of one value
// size (size > 0), or its durable workloads (size 0). Each runs in a child
// process of its own so that the child's peak RSS is that engine's alone.
type job struct {
	Engine string `json:"engine"`
	Size   int    `json:"size"`
	Count  int    `json:"count"`
	Run    int    `json:"run"`
}

func (j job) String() string {
	if j.Size == 0 {
		return fmt.Sprintf("%s durable run %d", j.Engine, j.Run)
	}
	return fmt.Sprintf("%s %d B × %d run %d", j.Engine, j.Size, j.Count, j.Run)
}

// childOutput is what a child prints on stdout, as JSON.
type childOutput struct {
	Results []result `json:"results"`
}

// runChild is the child side: it runs j in dir and prints its results.
func runChild(j job, dir string, c config) error {
	if *flagCPUProfile != "" {
		f, err := os.Create(fmt.Sprintf("%s.%s-%d-run%d", *flagCPUProfile, j.Engine, j.Size, j.Run))
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	open, err := openerFor(j.Engine)
	if err != nil {
		return err
	}
	var res []result
	if j.Size == 0 {
		res, err = runDurable(dir, j.Engine, open, c, *flagDurableOps)
	} else {
		res, err = runSize(dir, j.Engine, open, c, j.Size, j.Count, *flagReads, *flagSeed+int64(j.Run))
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(childOutput{Results: res})
}

// spawn runs j in a child process (this binary again, with every flag
// given to the parent and -child) and returns its results plus a peak RSS
// result: the child's ru_maxrss, in bytes, in Bytes.
func spawn(j job, dir string) ([]result, error) {
	spec, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	args := append(append([]string(nil), os.Args[1:]...), "-dir="+dir, "-child="+string(spec))
	cmd := exec.Command(selfExe(), args...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("enginebench: child %s: %w", j, err)
	}
	var out childOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return nil, fmt.Errorf("enginebench: child %s printed %q: %w", j, stdout.String(), err)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if ok {
		name := wPeakRSS + " durable"
		if j.Size > 0 {
			name = wPeakRSS + sizeSuffix(j.Size)
		}
		// ru_maxrss is in KiB on Linux.
		out.Results = append(out.Results, result{Workload: name, Engine: j.Engine, Bytes: ru.Maxrss << 10, Writes: -1})
	}
	return out.Results, nil
}

// selfExe is the running binary: /proc/self/exe on Linux, which still
// names this binary if its path was rebuilt or replaced during a long
// run, else os.Args[0].
func selfExe() string {
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		return "/proc/self/exe"
	}
	return os.Args[0]
}
