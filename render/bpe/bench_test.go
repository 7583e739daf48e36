package bpe

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Benchmarks (single core: go test -run '^$' -bench . -cpu 1 ./render/bpe/):
//   - BenchmarkLoad: Load of each model's tokenizer.json (bytes already in memory; every model of
//     benchModels: the byte-level families and the SentencePiece-style llama2 and gemma3);
//   - BenchmarkEncodeCold: 1 MiB of mixed text with an empty word cache (a fresh tokenizer);
//   - BenchmarkEncodeWarm: the same text again with the cache filled by earlier iterations.
// tools/oracle/bench_oracle.js measures the Rust crate on the same text for the ratio.

// benchModels are the models the benchmarks and CPU probes measure side by side.
var benchModels = append(slices.Clone(goldenFamilies), "llama2", "gemma3")

func BenchmarkLoad(b *testing.B) {
	for _, name := range benchModels {
		data := readModel(b, name)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Load(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func benchEncode(b *testing.B, warm bool) {
	text := string(readCorpusFile(b, "mixed.txt"))
	for _, name := range benchModels {
		b.Run(name, func(b *testing.B) {
			tok := family(b, name)
			dst := make([]uint32, 0, len(text))
			tok.cache = newWordCache(defaultCacheWords)
			if warm {
				dst = tok.AppendEncode(dst[:0], text)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(text)))
			b.ResetTimer()
			for b.Loop() {
				if !warm {
					b.StopTimer()
					tok.cache = newWordCache(defaultCacheWords)
					b.StartTimer()
				}
				dst = tok.AppendEncode(dst[:0], text)
			}
		})
	}
}

func BenchmarkEncodeCold(b *testing.B) { benchEncode(b, false) }
func BenchmarkEncodeWarm(b *testing.B) { benchEncode(b, true) }

// TestRSSAfterLoad loads each model in a fresh child process (this test binary, re-run) and checks
// the resident set size after load against the budget of issue 2 (100 MB). It also logs the load
// time, for information only.
func TestRSSAfterLoad(t *testing.T) {
	if name := os.Getenv("BPE_RSS_CHILD"); name != "" {
		rssChild(t, name)
		return
	}
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	for _, name := range benchModels {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRSSAfterLoad$", "-test.count=1")
		cmd.Env = append(os.Environ(), "BPE_RSS_CHILD="+name)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child for %s: %v\n%s", name, err, out)
		}
		var rss, gcd, base int
		for line := range strings.SplitSeq(string(out), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "RSS "); ok {
				fmt.Sscanf(v, "%d %d %d", &base, &gcd, &rss)
			}
		}
		if rss == 0 {
			t.Fatalf("child for %s printed no RSS:\n%s", name, out)
		}
		t.Logf("%s: RSS after load %.1f MB (%.1f MB before the heap is returned to the OS; process before load %.1f MB)",
			name, float64(rss)/1e6, float64(gcd)/1e6, float64(base)/1e6)
		// The number before FreeOSMemory depends on when the runtime's scavenger ran, so only
		// the settled one is checked.
		if rss > 100e6 {
			t.Errorf("%s: RSS after load = %.1f MB, want <= 100 MB", name, float64(rss)/1e6)
		}
	}
}

func rssChild(t *testing.T, name string) {
	base := vmRSS(t)
	data := readModel(t, name)
	tok, err := Load(data)
	if err != nil {
		t.Fatal(err)
	}
	data = nil
	runtime.GC()
	gcd := vmRSS(t)
	debug.FreeOSMemory()
	fmt.Printf("RSS %d %d %d\n", base, gcd, vmRSS(t))
	runtime.KeepAlive(tok)
}

// vmRSS returns the process's resident set size in bytes, from /proc/self/status.
func vmRSS(t testing.TB) int {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmRSS:")); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(string(v)), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return kb * 1024
		}
	}
	t.Skip("no VmRSS")
	return 0
}
