// Command benchplot draws the PNG plots of a `stitch bench` run from its bench.json: preparation
// time against context length per mode (wall and thread CPU time) and the prefix-cache hit ratio
// per mode. It is a separate command so that the stitch binary does not link the plotting
// libraries (gonum/plot, go-latex, fonts): they are needed only to redraw BENCHMARKS.md's figures.
//
// From the repository root:
//
//	./stitch bench --out bench/results
//	go run ./tools/benchplot bench/results        # writes bench/results/{prep,prep_cpu,hit_ratio}.png
//	go run ./tools/benchplot -o /tmp/plots bench/results/bench.json
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/stitchllm/stitch/bench"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "benchplot:", err)
		os.Exit(1)
	}
}

// run parses the command line and draws the plots.
func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("benchplot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "directory for the PNG files (default: the directory of bench.json)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: benchplot [-o DIR] RESULTS (a bench.json, or the directory `stitch bench --out` wrote)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("want one RESULTS argument")
	}
	path := fs.Arg(0)
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "bench.json")
	}
	res, err := readResult(path)
	if err != nil {
		return err
	}
	dir := *out
	if dir == "" {
		dir = filepath.Dir(path)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if len(res.Modes) == 0 {
		return fmt.Errorf("%s has no modes to plot (a --fleet-only run?)", path)
	}
	return writePlots(res, dir)
}

// readResult decodes bench.json into the type `stitch bench` wrote it from.
func readResult(path string) (*bench.Result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read bench results: %w", err)
	}
	var r bench.Result
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decode %s: %w", path, err)
	}
	return &r, nil
}
