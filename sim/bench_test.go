package sim_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stitchllm/stitch/sim"
)

// BenchmarkConcurrentStreams runs b.N streamed completions (token-id prompts, return_token_ids,
// include_usage, 128 tokens each with ignore_eos) over `streams` concurrent clients against a
// --fast simulator, and reports generated tokens per second and the prefix-cache hit ratio.
//
//	go test -run '^$' -bench ConcurrentStreams -benchtime 2000x ./sim/
func BenchmarkConcurrentStreams(b *testing.B) {
	for _, streams := range []int{1, 100, 500} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) {
			s, ts := newTestServer(b, sim.Options{})
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: streams, MaxConnsPerHost: streams}}
			// Each client is a tenant with a 1,000-token conversation prefix and a new turn.
			bodies := make([][]byte, streams)
			for i := range bodies {
				prompt := tokenPrompt(1000+i*7, 1000)
				bodies[i] = []byte(fmt.Sprintf(`{"model":"qwen3","prompt":%s,"max_tokens":128,"ignore_eos":true,"stream":true,`+
					`"return_token_ids":true,"stream_options":{"include_usage":true},"cache_salt":"tenant-%d"}`, mustJSON(prompt), i))
			}
			var next, tokens atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start, cpu0 := time.Now(), cpuTime()
			for c := range streams {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						n, err := streamOnce(client, ts.URL, bodies[c])
						if err != nil {
							b.Error(err)
							return
						}
						tokens.Add(int64(n))
					}
				}()
			}
			wg.Wait()
			elapsed, cpu := time.Since(start), cpuTime()-cpu0
			b.StopTimer()
			st := s.Stats()
			b.ReportMetric(float64(tokens.Load())/elapsed.Seconds(), "tokens/s")
			b.ReportMetric(float64(st.Hits)/float64(max(st.Queries, 1)), "hit-ratio")
			if cpu > 0 {
				// On a shared machine tokens/s follows the load; tokens per CPU-second does not.
				b.ReportMetric(float64(tokens.Load())/cpu.Seconds(), "tokens/cpu-s")
			}
		})
	}
}

// streamOnce sends one streamed completion and counts the token ids it carries.
func streamOnce(client *http.Client, base string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, base+"/v1/completions", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, done := 0, false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if i := bytes.Index(line, []byte(`"token_ids":[`)); i >= 0 {
			n += bytes.Count(line[i:bytes.IndexByte(line[i:], ']')+i], []byte(",")) + 1
		}
		if strings.HasPrefix(string(line), "data: [DONE]") {
			done = true
		}
	}
	io.Copy(io.Discard, resp.Body) //nolint:errcheck // draining for connection reuse
	if !done || n != 128 {
		return n, fmt.Errorf("stream ended early (done=%v, %d tokens)", done, n)
	}
	return n, sc.Err()
}
