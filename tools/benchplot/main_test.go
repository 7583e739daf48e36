package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlotsOfRecordedRun draws the plots of the run BENCHMARKS.md records (bench/results/bench.json,
// written by `stitch bench`) and checks each file is a PNG.
func TestPlotsOfRecordedRun(t *testing.T) {
	dir := t.TempDir()
	if err := run([]string{"-o", dir, filepath.Join("..", "..", "bench", "results")}, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"prep.png", "prep_cpu.png", "hit_ratio.png"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || !strings.HasPrefix(string(b), "\x89PNG") {
			t.Errorf("%s is not a PNG (err %v)", f, err)
		}
	}
}

func TestUsage(t *testing.T) {
	if err := run(nil, io.Discard); err == nil {
		t.Error("no RESULTS argument accepted")
	}
	if err := run([]string{t.TempDir()}, io.Discard); err == nil || !strings.Contains(err.Error(), "bench.json") {
		t.Errorf("a directory without bench.json: %v", err)
	}
}
