package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	"golang.org/x/sync/errgroup"
)

// turnHeader carries "session/turn" from the driver to the proxy's preparation recorder, so
// samples of different modes are the same turns.
const turnHeader = "X-Stitch-Bench-Turn"

// turnResult is what the client saw of one request.
type turnResult struct {
	session, turn int
	// ttft is request sent → first *.delta event; total is request sent → terminal event.
	ttft, total time.Duration
	// bodyBytes is the request body size (client → proxy).
	bodyBytes int
	// inputTokens, cachedTokens and outputTokens are the response's usage.
	inputTokens, cachedTokens, outputTokens int
	// responseID is the response's id.
	responseID string
}

// driver runs the workload's sessions against a Responses API base URL.
type driver struct {
	w      Workload
	base   string
	client *http.Client
	tools  json.RawMessage

	mu      sync.Mutex
	results []turnResult
	// bodies are the requests sent, by turn: the turn pass sends sampled ones again (turn.go).
	bodies map[turnKey][]byte
}

func newDriver(w Workload, base string) *driver {
	tr := &http.Transport{MaxIdleConnsPerHost: w.Concurrency + 4, DisableCompression: true}
	return &driver{w: w, base: strings.TrimSuffix(base, "/"), client: &http.Client{Transport: tr}, tools: toolsJSON()}
}

func (d *driver) close() { d.client.CloseIdleConnections() }

// run drives every session, Concurrency at a time, and returns the turns in session/turn order.
// The first failed turn stops the run.
func (d *driver) run(ctx context.Context) ([]turnResult, error) {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(d.w.Concurrency)
	for s := range d.w.Sessions {
		g.Go(func() error { return d.session(ctx, s) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out := make([]turnResult, len(d.results))
	copy(out, d.results)
	sortTurns(out)
	return out, nil
}

// warmupRounds is how many tool rounds of a session return short outputs.
const warmupRounds = 2

// call is a function call the model made, waiting for its output.
type call struct{ id, name string }

// session runs one conversation: a user message naming a tool, the model's call, the tool's long
// output (often with a nudge to the next tool), and so on for Turns requests.
func (d *driver) session(ctx context.Context, s int) error {
	st := d.newSession(s)
	for t := range d.w.Turns {
		if err := d.step(ctx, st, t); err != nil {
			return err
		}
	}
	return nil
}

// sessionState is one conversation between its turns: the script and what the last response left
// to answer.
type sessionState struct {
	s       int
	sc      *script
	prev    string
	pending []call
	rounds  int // tool rounds answered so far
}

func (d *driver) newSession(s int) *sessionState { return &sessionState{s: s, sc: newScript(d.w, s)} }

// step sends the session's turn t and records it.
func (d *driver) step(ctx context.Context, st *sessionState, t int) error {
	sc := st.sc
	var input []json.RawMessage
	if len(st.pending) == 0 {
		input = append(input, userItem(sc.userMessage(t == 0)))
	} else {
		// An agent's first tool calls are usually small (list files, grep) before it reads
		// whole files and logs; they also give the 1k-token preparation bucket its samples.
		mean := d.w.ToolOutputTokens
		if st.rounds < warmupRounds {
			mean = max(1, mean/12)
		}
		st.rounds++
		for _, c := range st.pending {
			input = append(input, outputItem(c.id, sc.toolOutput(c.name, mean)))
		}
		if sc.r.Float64() < d.w.FollowUpRate {
			input = append(input, userItem(sc.userMessage(false)))
		}
	}
	body := d.body(st.prev, input, sc.reasoningOff)
	res, id, calls, err := d.turn(ctx, st.s, t, body)
	if err != nil {
		return fmt.Errorf("%w: session %d turn %d: %w", ErrTurnFailed, st.s, t, err)
	}
	res.responseID = id
	d.mu.Lock()
	d.results = append(d.results, res)
	if d.bodies == nil {
		d.bodies = map[turnKey][]byte{}
	}
	d.bodies[turnKey{st.s, t}] = body
	d.mu.Unlock()
	st.prev, st.pending = id, calls
	return nil
}

func userItem(text string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Type    string `json:"type"`
		Role    string `json:"role"`
		Content string `json:"content"`
	}{"message", "user", text})
	return b
}

func outputItem(callID, output string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Type   string `json:"type"`
		CallID string `json:"call_id"`
		Output string `json:"output"`
	}{"function_call_output", callID, output})
	return b
}

// body builds a request as agent SDKs send it: instructions and tools on every turn, only the new
// items as input, chained by previous_response_id, streamed and stored.
func (d *driver) body(prev string, input []json.RawMessage, reasoningOff bool) []byte {
	type reasoning struct {
		Effort string `json:"effort"`
	}
	req := struct {
		Model              string            `json:"model"`
		Instructions       string            `json:"instructions"`
		Tools              json.RawMessage   `json:"tools"`
		Input              []json.RawMessage `json:"input"`
		PreviousResponseID string            `json:"previous_response_id,omitempty"`
		Reasoning          *reasoning        `json:"reasoning,omitempty"`
		MaxOutputTokens    int               `json:"max_output_tokens"`
		Stream             bool              `json:"stream"`
		Store              bool              `json:"store"`
	}{Model: d.w.Model, Instructions: instructions, Tools: d.tools, Input: input, PreviousResponseID: prev,
		MaxOutputTokens: 2048, Stream: true, Store: true}
	if reasoningOff {
		req.Reasoning = &reasoning{Effort: "none"}
	}
	b, _ := json.Marshal(req)
	return b
}

// turn sends one request and reads its event stream to the terminal event.
func (d *driver) turn(ctx context.Context, s, t int, body []byte) (turnResult, string, []call, error) {
	res := turnResult{session: s, turn: t, bodyBytes: len(body)}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.base+"/v1/responses", bytes.NewReader(body))
	if err != nil {
		return res, "", nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer bench")
	req.Header.Set(turnHeader, strconv.Itoa(s)+"/"+strconv.Itoa(t))
	req.Header.Set(sessionHeader, "bench-session-"+strconv.Itoa(s))
	start := time.Now()
	resp, err := d.client.Do(req)
	if err != nil {
		return res, "", nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return res, "", nil, fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(msg))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok {
			continue
		}
		typ := gjson.GetBytes(data, "type").Str
		if res.ttft == 0 && strings.HasSuffix(typ, ".delta") {
			res.ttft = time.Since(start)
		}
		switch typ {
		case "response.completed":
			res.total = time.Since(start)
			if res.ttft == 0 {
				res.ttft = res.total
			}
			r := gjson.GetBytes(data, "response")
			res.inputTokens = int(r.Get("usage.input_tokens").Int())
			res.cachedTokens = int(r.Get("usage.input_tokens_details.cached_tokens").Int())
			res.outputTokens = int(r.Get("usage.output_tokens").Int())
			var calls []call
			for _, it := range r.Get("output").Array() {
				if it.Get("type").Str == "function_call" {
					calls = append(calls, call{id: it.Get("call_id").Str, name: it.Get("name").Str})
				}
			}
			return res, r.Get("id").Str, calls, nil
		case "response.failed", "response.incomplete", "error":
			return res, "", nil, fmt.Errorf("%s: %s", typ, truncate(data, 300))
		}
	}
	if err := sc.Err(); err != nil {
		return res, "", nil, fmt.Errorf("read stream: %w", err)
	}
	return res, "", nil, fmt.Errorf("stream ended without a terminal event")
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
