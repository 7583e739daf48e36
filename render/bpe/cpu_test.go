package bpe

import (
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// threadCPU returns the CPU time of the calling OS thread (the goroutine must be locked to it).
func threadCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_THREAD, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestCPUThroughput reports encode throughput in CPU time of the encoding thread, which stays
// meaningful on a machine shared with other work (wall-clock benchmarks do not). It only logs:
//
//	BPE_CPU=1 go test -run TestCPUThroughput -v ./render/bpe/
func TestCPUThroughput(t *testing.T) {
	if os.Getenv("BPE_CPU") == "" {
		t.Skip("set BPE_CPU=1 to measure")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	text := string(readCorpusFile(t, "mixed.txt"))
	only := os.Getenv("BPE_MODELS") // comma-separated subset; default every model
	for _, name := range benchModels {
		if only != "" && !strings.Contains(","+only+",", ","+name+",") {
			continue
		}
		m := struct{ name string }{name}
		tok := family(t, name)
		var dst []uint32
		cold, warm := time.Duration(1<<62), time.Duration(1<<62)
		for range 3 { // best of 3: the machine is shared
			tok.cache = newWordCache(defaultCacheWords)
			c0 := threadCPU()
			dst = tok.AppendEncode(dst[:0], text)
			c1 := threadCPU()
			dst = tok.AppendEncode(dst[:0], text)
			c2 := threadCPU()
			cold, warm = min(cold, c1-c0), min(warm, c2-c1)
		}
		mb := float64(len(text)) / 1e6
		t.Logf("%s: 1 MiB mixed text, thread CPU: cold %.1f MB/s, warm %.1f MB/s", m.name, mb/cold.Seconds(), mb/warm.Seconds())
	}
}

// TestCPULoad reports Load's CPU time on the calling thread (best of 5), for the same reason.
func TestCPULoad(t *testing.T) {
	if os.Getenv("BPE_CPU") == "" {
		t.Skip("set BPE_CPU=1 to measure")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	only := os.Getenv("BPE_MODELS")
	for _, name := range benchModels {
		if only != "" && !strings.Contains(","+only+",", ","+name+",") {
			continue
		}
		data := readModel(t, name)
		best := time.Duration(1 << 62)
		for range 5 {
			c0 := threadCPU()
			if _, err := Load(data); err != nil {
				t.Fatal(err)
			}
			best = min(best, threadCPU()-c0)
		}
		t.Logf("%s: Load %v thread CPU (best of 5)", name, best)
	}
}
