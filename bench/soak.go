package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/prepare"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/store"
)

// SoakOptions configure a [RunSoak]: the operator guide's soak of short conversations (issue 31),
// driven against one canonical-mode proxy as the modes' (newProxy: stitch serve's default cache
// sizes, no Redis, an in-memory checkpoint store).
type SoakOptions struct {
	// Duration is how long new conversations start; those running then finish.
	Duration time.Duration
	// Workers run conversations back to back, one each at a time (default 16).
	Workers int
	// Workload gives the model name, context length, seed and drift; its latencies are ignored
	// (the simulator runs as stitch sim --fast, as the hand-run soak did).
	Workload Workload
	Model    *render.Renderer
	Harmony  *prepare.Harmony
	Family   family.Names
	// Sim starts the simulator (default: in process).
	Sim       SimLauncher
	AuditRate float64
	Logger    *slog.Logger
	Progress  io.Writer
	// SampleEvery is the RSS sampling period (default 3 s, as the hand-run soak).
	SampleEvery time.Duration
}

// The soak's conversations, as the operator guide's hand-run soak: 4 turns of about 2 KB of user
// text each, max_output_tokens 64, every other request streamed.
const (
	soakTurns           = 4
	soakUserBytes       = 2048
	soakMaxOutputTokens = 64
)

// SoakResult is the soak's peak RSS against the operator guide's formula for its settings
// (memoryBound: N = workers, P its longest prompt, B workers × its largest body, K the in-memory
// checkpoint store's bytes).
type SoakResult struct {
	DurationS     float64 `json:"duration_s"`
	Workers       int     `json:"workers"`
	Conversations int     `json:"conversations"`
	Turns         int     `json:"turns"`
	// FailedTurns are requests answered otherwise than completed or incomplete (each ends its
	// conversation); FirstError is the first one's message.
	FailedTurns int    `json:"failed_turns"`
	FirstError  string `json:"first_error,omitempty"`
	// RSSStartMB is this process's RSS when the soak started (after a collection); RSSPeakMB its
	// peak during the soak (VmHWM and the samples, whichever is higher); RSSSamplesMB the samples.
	RSSStartMB   float64   `json:"rss_start_mb"`
	RSSPeakMB    float64   `json:"rss_peak_mb"`
	RSSSamplesMB []float64 `json:"rss_samples_mb"`
	// BoundMB and LiveMB are the formula's RSS bound (2 × L + 50) and L.
	BoundMB float64 `json:"bound_mb"`
	LiveMB  float64 `json:"live_mb"`
	// HeapLiveMaxMB is the largest live heap the runtime reported after a collection (the
	// measured L).
	HeapLiveMaxMB float64 `json:"heap_live_max_mb"`
	// HotEntries and HotMB are the proxy's hot cache at the end (its own accounting).
	HotEntries int     `json:"hot_entries"`
	HotMB      float64 `json:"hot_mb"`
	// Memory is the formula's inputs.
	Memory *MemoryResult `json:"memory"`
	OK     bool          `json:"ok"`
	// LoadAvg is /proc/loadavg at the soak's start and end (other work on a shared machine).
	LoadAvg [2]string `json:"load_avg"`
}

// CheckLine is the soak's line of the report.
func (s *SoakResult) CheckLine() string {
	v := "PASS"
	if !s.OK {
		v = "FAIL"
	}
	return fmt.Sprintf("soak rss ≤ bound: %s (peak %.0f MiB vs %.0f MiB, L %.0f formula / %.0f measured; %d conversations, %d turns, %d failed, %d workers, %.0f s; hot cache %d entries, %.0f MiB)",
		v, s.RSSPeakMB, s.BoundMB, s.LiveMB, s.HeapLiveMaxMB, s.Conversations, s.Turns, s.FailedTurns, s.Workers, s.DurationS, s.HotEntries, s.HotMB)
}

// RunSoak drives Workers conversations at a time against a fresh canonical-mode proxy for
// Duration, sampling this process's RSS, and fills the formula for the soak's settings.
func RunSoak(ctx context.Context, o SoakOptions) (*SoakResult, error) {
	if o.Duration <= 0 || o.Model == nil {
		return nil, fmt.Errorf("%w: the soak needs a duration and a model", ErrBadOptions)
	}
	if o.Workers <= 0 {
		o.Workers = 16
	}
	if o.SampleEvery <= 0 {
		o.SampleEvery = 3 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Sim == nil {
		o.Sim = InProcessSim{Model: o.Model, Family: o.Family}
	}
	w := o.Workload
	w.TTFTBase, w.PrefillPerToken, w.DecodePerToken = 0, 0, 0
	simi, err := o.Sim.Start(ctx, w)
	if err != nil {
		return nil, err
	}
	defer func() { _ = simi.Close() }()
	// The checkpoints go to the embedded store stitch serve uses by default (bbolt under
	// --data-dir): its pages are the formula's D, mapped from the file and counted once, where a
	// store on the heap would sit in L and be doubled by the collector's headroom.
	dir, err := os.MkdirTemp("", "stitch-soak-")
	if err != nil {
		return nil, fmt.Errorf("soak: %w", err)
	}
	defer os.RemoveAll(dir)
	bolt, err := store.OpenBolt(dir, store.BoltOptions{Logger: o.Logger})
	if err != nil {
		return nil, fmt.Errorf("soak: %w", err)
	}
	defer bolt.Close()
	p, err := newProxy(proxyOptions{mode: ModeCanonical, model: o.Model, harmony: o.Harmony, family: o.Family, upstream: simi.URL(),
		transport: TransportHTTP, w: w, auditRate: o.AuditRate, logger: o.Logger, checkpoints: bolt})
	if err != nil {
		return nil, err
	}
	defer p.close()

	runtime.GC()
	debug.FreeOSMemory()
	res := &SoakResult{Workers: o.Workers, RSSStartMB: rssMB(), LoadAvg: [2]string{machine().LoadAvg}}
	resetPeakRSS()
	tr := &http.Transport{MaxIdleConnsPerHost: o.Workers + 4, DisableCompression: true}
	client := &http.Client{Transport: tr}
	defer client.CloseIdleConnections()

	var (
		mu                    sync.Mutex
		maxPrompt, maxBody    int
		convs, turns, failed  int
		firstErr              string
		sampleDone, samplerOK = make(chan struct{}), make(chan struct{})
	)
	go func() { // the sampler: RSS and the runtime's live heap every SampleEvery
		defer close(samplerOK)
		tick := time.NewTicker(o.SampleEvery)
		defer tick.Stop()
		for {
			sampleHeap(res)
			res.RSSSamplesMB = append(res.RSSSamplesMB, rssMB())
			select {
			case <-sampleDone:
				return
			case <-tick.C:
			}
		}
	}()
	start := time.Now()
	deadline := start.Add(o.Duration)
	var wg sync.WaitGroup
	for wk := range o.Workers {
		wg.Go(func() {
			for c := 0; time.Now().Before(deadline) && ctx.Err() == nil; c++ {
				sc := newScript(w, wk*1_000_000+c)
				prev := ""
				done := 0
				for t := range soakTurns {
					body := soakBody(w.Model, prev, sc, t%2 == 1)
					id, prompt, err := soakTurn(ctx, client, p.url, body, t%2 == 1)
					mu.Lock()
					maxBody = max(maxBody, len(body))
					maxPrompt = max(maxPrompt, prompt)
					if err != nil {
						failed++
						if firstErr == "" {
							firstErr = err.Error()
							fmt.Fprintf(o.Progress, "soak: worker %d conversation %d turn %d: %v\n", wk, c, t, err)
						}
					} else {
						turns++
					}
					mu.Unlock()
					if err != nil {
						break
					}
					prev, done = id, done+1
				}
				if done == soakTurns {
					mu.Lock()
					convs++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	res.DurationS = time.Since(start).Seconds()
	res.LoadAvg[1] = machine().LoadAvg
	close(sampleDone)
	<-samplerOK
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("soak: %w", err)
	}
	peak := peakRSSMB()
	for _, s := range res.RSSSamplesMB {
		peak = max(peak, s)
	}
	res.RSSPeakMB = peak
	res.Conversations, res.Turns, res.FailedTurns, res.FirstError = convs, turns, failed, firstErr
	if p.arts != nil && p.arts.Hot != nil {
		b, n := p.arts.Hot.Usage()
		res.HotEntries, res.HotMB = n, float64(b)/(1<<20)
	}
	res.Memory = memoryBound(peak, true, o.Workers, maxPrompt, int64(maxBody), 0)
	if st, err := os.Stat(filepath.Join(dir, "checkpoints.db")); err == nil {
		res.Memory.FileMB = float64(st.Size()) / (1 << 20)
		res.Memory.BoundMB += res.Memory.FileMB // RSS ≤ 2 × L + 50 + D
	}
	res.BoundMB, res.LiveMB = res.Memory.BoundMB, res.Memory.LiveMB
	res.OK = res.RSSPeakMB <= res.BoundMB
	if turns == 0 {
		return res, fmt.Errorf("%w: soak: no request succeeded: %s", ErrTurnFailed, firstErr)
	}
	return res, nil
}

// sampleHeap raises res.HeapLiveMaxMB to the runtime's live heap as of the last collection.
func sampleHeap(res *SoakResult) {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		res.HeapLiveMaxMB = max(res.HeapLiveMaxMB, float64(s[0].Value.Uint64())/(1<<20))
	}
}

// soakBody is one soak request: about 2 KB of the script's words as the user turn, chained by
// previous_response_id, stored, max_output_tokens 64.
func soakBody(model, prev string, sc *script, stream bool) []byte {
	var b strings.Builder
	g := gen{r: sc.r, words: sc.words}
	b.WriteString(sc.userMessage(prev == ""))
	for b.Len() < soakUserBytes {
		b.WriteByte(' ')
		b.WriteString(g.word())
	}
	req := struct {
		Model              string            `json:"model"`
		Input              []json.RawMessage `json:"input"`
		PreviousResponseID string            `json:"previous_response_id,omitempty"`
		MaxOutputTokens    int               `json:"max_output_tokens"`
		Stream             bool              `json:"stream"`
		Store              bool              `json:"store"`
	}{Model: model, Input: []json.RawMessage{userItem(b.String())}, PreviousResponseID: prev,
		MaxOutputTokens: soakMaxOutputTokens, Stream: stream, Store: true}
	out, _ := json.Marshal(req)
	return out
}

// soakTurn sends one soak request and returns the response's id and prompt tokens. A response
// cut at max_output_tokens (incomplete) is an answer too: it is stored and continued.
func soakTurn(ctx context.Context, client *http.Client, base string, body []byte, stream bool) (string, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/responses", bytes.NewReader(body))
	if err != nil {
		return "", 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer bench")
	resp, err := client.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return "", 0, fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(msg))
	}
	answer := func(r gjson.Result) (string, int, error) {
		switch st := r.Get("status").Str; st {
		case "completed", "incomplete":
			return r.Get("id").Str, int(r.Get("usage.input_tokens").Int()), nil
		default:
			return "", 0, fmt.Errorf("response status %q: %s", st, truncate([]byte(r.Raw), 300))
		}
	}
	if !stream {
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			return "", 0, fmt.Errorf("read response: %w", err)
		}
		return answer(gjson.ParseBytes(raw))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok {
			continue
		}
		switch typ := gjson.GetBytes(data, "type").Str; typ {
		case "response.completed", "response.incomplete", "response.failed":
			return answer(gjson.GetBytes(data, "response"))
		case "error":
			return "", 0, fmt.Errorf("error event: %s", truncate(data, 300))
		}
	}
	if err := sc.Err(); err != nil {
		return "", 0, fmt.Errorf("read stream: %w", err)
	}
	return "", 0, fmt.Errorf("stream ended without a terminal event")
}
