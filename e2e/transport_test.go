package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// transportStack is one recording sim serving HTTP and gRPC, and a serve in front of it over one
// of the two transports.
type transportStack struct {
	name    string
	front   *stack // the serve, for doRaw/postStream
	sim     *proc
	recPath string
}

// startTransports starts, for each transport, its own recording sim (identical flags, with
// simFlags; no --fast unless given) and a
// serve that reaches it over that transport: "http" (--upstream http://…) and "grpc"
// (--upstream grpc://…, the sim's --grpc-listen).
func startTransports(t *testing.T, st *stack, simFlags ...string) []*transportStack {
	t.Helper()
	procs := newExtraProcs(t)
	var out []*transportStack
	for _, transport := range []string{"http", "grpc"} {
		ts := &transportStack{name: transport, recPath: filepath.Join(t.TempDir(), transport+".jsonl")}
		grpcAddr, err := freeAddr()
		if err != nil {
			t.Fatal(err)
		}
		flags := append([]string{"--record", ts.recPath, "--grpc-listen", grpcAddr}, simFlags...)
		ts.sim = procs.start(transport+" sim", func() (*proc, error) {
			return startReady(st.bin, "sim", "/health", func(addr string) []string {
				return append([]string{"sim", "--listen", addr, "--served-model-name", modelName}, flags...)
			})
		})
		upstreamURL := "http://" + ts.sim.addr
		if transport == "grpc" {
			upstreamURL = "grpc://" + grpcAddr
		}
		dataDir := t.TempDir()
		serve := procs.start(transport+" serve", func() (*proc, error) {
			return startReady(st.bin, "serve", "/readyz", func(addr string) []string {
				return []string{"serve", "--listen", addr, "--upstream", upstreamURL, "--served-model-name", modelName, "--data-dir", dataDir}
			})
		})
		ts.front = &stack{baseURL: "http://" + serve.addr}
		out = append(out, ts)
	}
	return out
}

// turnOutcome is what a client sees of one turn, without the ids that differ per server.
type turnOutcome struct {
	Status      string
	Types       []string
	Text        string
	Reasoning   string
	Call        string // name and arguments of a function call
	Usage       wireUsage
	StreamKinds []string // event types of a streamed turn, in order
}

func outcomeOf(r wireResponse) turnOutcome {
	o := turnOutcome{Status: r.Status}
	if r.Usage != nil {
		o.Usage = *r.Usage
	}
	for _, it := range r.Output {
		o.Types = append(o.Types, it.Type)
		for _, p := range it.Content {
			switch it.Type {
			case "message":
				o.Text += p.Text
			case "reasoning":
				o.Reasoning += p.Text
			}
		}
		if it.Type == "function_call" {
			o.Call = it.Name + " " + strPtr(it.Arguments)
		}
	}
	return o
}

// simRecord is a record line as compared across transports (the endpoint differs by design).
type simRecord struct {
	PromptTokenIDs []uint32 `json:"prompt_token_ids"`
	MaxTokens      int      `json:"max_tokens"`
	CachedTokens   int      `json:"cached_tokens"`
	OutputTokenIDs []uint32 `json:"output_token_ids"`
	FinishReason   string   `json:"finish_reason"`
}

// readTurnRecords reads the record lines of turns (not the HTTP startup probe, prompt [0]).
func readTurnRecords(t *testing.T, path string) []simRecord {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatalf("read record: %v", err)
	}
	var out []simRecord
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		var r simRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("record line: %v: %s", err, sc.Bytes())
		}
		if len(r.PromptTokenIDs) == 1 && r.PromptTokenIDs[0] == 0 && len(r.OutputTokenIDs) <= 1 {
			continue
		}
		out = append(out, r)
	}
	return out
}

// TestTransportsSameConversation runs one conversation (a text turn, a chained streamed turn, a
// tool call and its result, stream and non-stream, a structured answer with sampling parameters) against serve over the HTTP and over the gRPC
// upstream: the model must see identical prompt ids and max_tokens (sim --record), generate the
// same ids with the same prefix-cache hits, and the client must see the same outcomes.
func TestTransportsSameConversation(t *testing.T) {
	st := requireStack(t)
	if st.bin == "" {
		t.Skip("external stack (STITCH_E2E_BASE_URL): cannot start sims")
	}
	stacks := startTransports(t, st, "--fast", "--seed", "7")
	ctx := testContext(t)
	tool := map[string]any{"type": "function", "name": "get_weather", "description": "Current weather for a city.",
		"parameters": weatherSchema(), "strict": true}

	var got [2][]turnOutcome
	for i, ts := range stacks {
		prev := ""
		turn := func(what string, body map[string]any, stream bool) wireResponse {
			t.Helper()
			body["model"] = modelName
			if prev != "" {
				body["previous_response_id"] = prev
			}
			var r wireResponse
			var kinds []string
			if stream {
				body["stream"] = true
				res := checkStream(t, ts.front.postStream(t, ctx, mustJSON(t, body), "text/event-stream"))
				r = res.Response
				for _, ev := range res.Events {
					kinds = append(kinds, ev.Type)
				}
			} else {
				status, _, b := ts.front.doRaw(t, ctx, http.MethodPost, "/v1/responses", mustJSON(t, body), nil)
				if status != http.StatusOK {
					t.Fatalf("%s %s: status %d: %s", ts.name, what, status, b)
				}
				if err := json.Unmarshal(b, &r); err != nil {
					t.Fatalf("%s %s: %v", ts.name, what, err)
				}
			}
			prev = r.ID
			o := outcomeOf(r)
			o.StreamKinds = kinds
			got[i] = append(got[i], o)
			return r
		}
		turn("turn 1", map[string]any{"input": "Hello there, who are you?", "instructions": "Answer briefly."}, false)
		turn("turn 2", map[string]any{"input": "Tell me more about that."}, true)
		r3 := turn("turn 3", map[string]any{"input": "What is the weather in Paris? Use get_weather.", "tools": []any{tool}}, false)
		fc := checkWeatherCall(t, r3)
		turn("turn 4", map[string]any{"tools": []any{tool}, "input": []any{map[string]any{
			"type": "function_call_output", "call_id": fc.CallID, "output": weatherOutput}}}, true)
		r5 := turn("turn 5", map[string]any{"input": "Same for Oslo, please.", "tools": []any{tool}}, true)
		checkWeatherCall(t, r5)
		prev = ""
		turn("turn 6 (structured, sampling)", map[string]any{"input": "Give me a city as JSON.", "temperature": 0.7, "top_p": 0.9,
			"max_output_tokens": 300, "text": map[string]any{"format": map[string]any{"type": "json_schema", "name": "city", "strict": true,
				"schema": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}},
					"required": []string{"city"}, "additionalProperties": false}}}}, false)
	}
	if diff := cmp.Diff(got[0], got[1]); diff != "" {
		t.Errorf("client outcomes differ (-http +grpc):\n%s", diff)
	}
	// The pass-through routes: /v1/models from GetModelInfo, chat completions refused in
	// OpenAI's shape (the engine API has no such route).
	g := stacks[1].front
	if status, _, b := g.doRaw(t, ctx, http.MethodGet, "/v1/models", nil, nil); status != http.StatusOK || !bytes.Contains(b, []byte(`"id":"`+modelName+`"`)) {
		t.Errorf("gRPC upstream: GET /v1/models = %d %s", status, b)
	}
	chat := mustJSON(t, map[string]any{"model": modelName, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	status, _, b := g.doRaw(t, ctx, http.MethodPost, "/v1/chat/completions", chat, nil)
	if _, code, _, _ := decodeAPIError(t, b); status != http.StatusNotFound || code != "unsupported_upstream_route" {
		t.Errorf("gRPC upstream: POST /v1/chat/completions = %d %s, want 404 unsupported_upstream_route", status, b)
	}

	var recs [2][]simRecord
	for i, ts := range stacks {
		if err := ts.sim.stop(); err != nil { // ends its writes
			t.Fatalf("stop %s sim: %v", ts.name, err)
		}
		recs[i] = readTurnRecords(t, ts.recPath)
	}
	if len(recs[0]) != 6 {
		t.Fatalf("HTTP sim recorded %d turns, want 6", len(recs[0]))
	}
	if diff := cmp.Diff(recs[0], recs[1]); diff != "" {
		t.Errorf("what the model saw differs (-http +grpc):\n%s", diff)
	}
	// Turns 2 and 3 change the system prompt (instructions, tools), so they reuse nothing; the
	// tool result and the turn after it continue the same prefix.
	for i, r := range recs[1] {
		if (i == 3 || i == 4) && r.CachedTokens == 0 {
			t.Errorf("gRPC turn %d: no prefix-cache hit", i+1)
		}
		t.Logf("turn %d: %d prompt ids, %d cached, %d generated, max_tokens %d", i+1, len(r.PromptTokenIDs), r.CachedTokens, len(r.OutputTokenIDs), r.MaxTokens)
	}
}

// TestTransportsDisconnectAborts: a streaming client that goes away mid-answer ends the
// generation on the model server (finish_reason "abort", far fewer ids than allowed) over both
// transports: the HTTP path by closing the upstream request, the gRPC path by cancelling the
// stream and sending Abort.
func TestTransportsDisconnectAborts(t *testing.T) {
	st := requireStack(t)
	if st.bin == "" {
		t.Skip("external stack (STITCH_E2E_BASE_URL): cannot start sims")
	}
	// One token every 200 ms: an answer of 400 tokens would take 80 s.
	stacks := startTransports(t, st, "--decode-us-per-token", "200000", "--output-len", "400")
	for _, ts := range stacks {
		t.Run(ts.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(testContext(t))
			body := mustJSON(t, map[string]any{"model": modelName, "input": "Write a long story.", "stream": true, "max_output_tokens": 2000})
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.front.baseURL+"/v1/responses", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+apiKey)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("POST: %v", err)
			}
			// Read until the first delta: the generation is running upstream.
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() && !bytes.Contains(sc.Bytes(), []byte(".delta")) {
			}
			cancel()
			resp.Body.Close()
			// The record line is written when the generation ends; a not-aborted one would take
			// a minute more, beyond this wait.
			deadline := time.Now().Add(30 * time.Second)
			var recs []simRecord
			for time.Now().Before(deadline) {
				if recs = readTurnRecords(t, ts.recPath); len(recs) > 0 {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if len(recs) != 1 {
				t.Fatalf("sim recorded %d turns after the disconnect, want 1 (aborted)", len(recs))
			}
			if r := recs[0]; r.FinishReason != "abort" || len(r.OutputTokenIDs) >= 400 {
				t.Errorf("finish_reason %q after %d ids, want abort well before the end", r.FinishReason, len(r.OutputTokenIDs))
			}
		})
	}
}

// TestGRPCUpstreamRefusals: serve refuses at startup, with a reason, a configuration the gRPC
// engine API cannot carry (it has no cache_salt and no model or adapter field).
func TestGRPCUpstreamRefusals(t *testing.T) {
	st := requireStack(t)
	if st.bin == "" {
		t.Skip("external stack (STITCH_E2E_BASE_URL): cannot start serve")
	}
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.json")
	if err := os.WriteFile(keys, []byte(`[{"tenant":"acme","key_sha256":"`+strings.Repeat("1", 64)+
		`"},{"tenant":"globex","key_sha256":"`+strings.Repeat("2", 64)+`"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		extra []string
		want  string
	}{
		{"two tenants", []string{"--api-keys", keys}, "no cache_salt"},
		{"upstream key", []string{"--upstream-api-key", "k"}, "takes no key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr, err := freeAddr()
			if err != nil {
				t.Fatal(err)
			}
			args := append([]string{"serve", "--listen", addr, "--upstream", "grpc://127.0.0.1:1", "--served-model-name", modelName,
				"--data-dir", t.TempDir()}, tt.extra...)
			p, err := startProc("serve", st.bin, addr, args)
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-p.done:
			case <-time.After(readyTimeout):
				_ = p.stop()
				t.Fatal("serve did not refuse the configuration")
			}
			if p.exitCode() == 0 || !strings.Contains(p.output(), tt.want) {
				t.Errorf("exit %d, output lacks %q:\n%s", p.exitCode(), tt.want, p.tail())
			}
		})
	}
}
