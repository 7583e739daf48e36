package jinja

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// cpuTime returns the process's user+system CPU time in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkRenderQwen3 renders the Qwen3 chat template for a 20-message
// conversation with 3 tools (the budget is 200 µs).
func BenchmarkRenderQwen3(b *testing.B) {
	src, err := os.ReadFile(filepath.Join(goldenDir, "templates", "qwen3.jinja"))
	if err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(goldenDir, "messages", "06_long_tools.json"))
	if err != nil {
		b.Fatal(err)
	}
	vars, err := VarsFromJSON(data)
	if err != nil {
		b.Fatal(err)
	}
	msgs := vars["messages"].list()
	if len(msgs) < 20 || len(vars["tools"].list()) != 3 {
		b.Fatalf("want >= 20 messages and 3 tools, have %d and %d", len(msgs), len(vars["tools"].list()))
	}
	vars["messages"] = List(msgs[:20]...)
	t, err := Parse("qwen3", string(src), Options{})
	if err != nil {
		b.Fatal(err)
	}
	out, err := t.Execute(vars)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		if _, err := t.Execute(vars); err != nil {
			b.Fatal(err)
		}
	}
	// Process CPU time per render: closer to the cost on an idle machine
	// than wall time when other processes share the cores.
	if n := b.N; n > 0 {
		b.ReportMetric(float64(cpuTime()-start)/float64(n)/1e3, "cpu-µs/op")
	}
}

func BenchmarkParseQwen3(b *testing.B) {
	src, err := os.ReadFile(filepath.Join(goldenDir, "templates", "qwen3.jinja"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("qwen3", string(src), Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
