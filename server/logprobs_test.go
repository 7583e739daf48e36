package server_test

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tidwall/gjson"
	"google.golang.org/grpc"

	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/server"
	"github.com/stitchllm/stitch/sim"
	"github.com/stitchllm/stitch/stack"
	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/upstream"
	"github.com/stitchllm/stitch/upstream/vllmgrpc"
)

// logprobsStack is stitch in front of one simulator, over the HTTP or the gRPC upstream.
func logprobsStack(t *testing.T, m *render.Renderer, s *sim.Server, overGRPC bool) string {
	t.Helper()
	var up server.Upstream
	if overGRPC {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		gs := grpc.NewServer()
		s.RegisterGRPC(gs)
		go gs.Serve(ln) //nolint:errcheck // Stop ends it
		t.Cleanup(gs.Stop)
		c, err := vllmgrpc.New(vllmgrpc.Options{Target: "grpc://" + ln.Addr().String()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		up = c
	} else {
		hs := httptest.NewServer(s)
		t.Cleanup(hs.Close)
		up = upstream.New(upstream.Options{BaseURL: hs.URL})
	}
	srv, err := server.New(server.Options{
		Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry(),
		Upstream: up, Checkpoints: store.NewMemory(),
		Models: map[string]*server.ModelRuntime{"qwen3": mustRuntime(t, stack.ModelConfig{Name: "qwen3", Render: m, MaxModelLen: 32768})},
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return hs.URL
}

func postResponse(t *testing.T, base, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(base+"/v1/responses", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// sseData returns the data of every event of an SSE body.
func sseData(b []byte) []gjson.Result {
	var out []gjson.Result
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, gjson.Parse(d))
		}
	}
	return out
}

// TestLogprobs: include message.output_text.logprobs and top_logprobs, against the simulator over
// both upstream transports: the message's tokens concatenate to its text, each with N sorted
// alternatives; reasoning has none; the stream's deltas list the same tokens; both transports
// answer alike; a stored response with logprobs continues.
func TestLogprobs(t *testing.T) {
	m, err := render.LoadModel(os.DirFS("../testdata/models/qwen3"), render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sim.Options{Tokenizer: m.Tokenizer(), Fast: true, StreamInterval: 2, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	bases := map[string]string{"http": logprobsStack(t, m, s, false), "grpc": logprobsStack(t, m, s, true)}
	const body = `{"model":"qwen3","input":"Tell me about the sea, briefly.","include":["message.output_text.logprobs"],"top_logprobs":3,"max_output_tokens":200`
	texts := map[string]string{}
	for _, name := range []string{"http", "grpc"} {
		base := bases[name]
		t.Run(name, func(t *testing.T) {
			status, b := postResponse(t, base, body+`}`)
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, b)
			}
			r := gjson.ParseBytes(b)
			var msgText string
			var lps []gjson.Result
			for _, it := range r.Get("output").Array() {
				for _, part := range it.Get("content").Array() {
					got := part.Get("logprobs").Array()
					if it.Get("type").Str != "message" {
						if len(got) > 0 {
							t.Errorf("%s item has logprobs", it.Get("type").Str)
						}
						continue
					}
					msgText, lps = part.Get("text").Str, got
				}
			}
			if msgText == "" || len(lps) == 0 {
				t.Fatalf("no message text with logprobs: %s", b)
			}
			if lps[0].Get("token").Str == "" {
				t.Errorf("the first token contributes nothing (a marker counted as text): %s", lps[0].Raw)
			}
			var joined strings.Builder
			for _, lp := range lps {
				joined.WriteString(lp.Get("token").Str)
				if v := lp.Get("logprob").Float(); v > 0 {
					t.Errorf("logprob %v > 0", v)
				}
				if n := len(lp.Get("bytes").Array()); n != len(lp.Get("token").Str) {
					t.Errorf("token %q lists %d bytes", lp.Get("token").Str, n)
				}
				top := lp.Get("top_logprobs").Array()
				if len(top) != 3 {
					t.Errorf("%d top_logprobs, want 3", len(top))
				}
				for j := 1; j < len(top); j++ {
					if top[j].Get("logprob").Float() > top[j-1].Get("logprob").Float() {
						t.Errorf("top_logprobs not sorted: %s", lp.Get("top_logprobs").Raw)
					}
				}
			}
			if joined.String() != msgText {
				t.Errorf("tokens join to %q, text %q", joined.String(), msgText)
			}
			texts[name] = lpsKey(lps)

			// Streamed: the delta events list the same tokens, each once.
			status, b = postResponse(t, base, body+`,"stream":true}`)
			if status != http.StatusOK {
				t.Fatalf("stream status %d", status)
			}
			var deltas []gjson.Result
			var final gjson.Result
			for _, ev := range sseData(b) {
				switch ev.Get("type").Str {
				case "response.output_text.delta":
					deltas = append(deltas, ev.Get("logprobs").Array()...)
				case "response.reasoning_text.delta":
					if ev.Get("logprobs").Exists() {
						t.Errorf("reasoning delta carries logprobs")
					}
				case "response.completed":
					final = ev.Get("response")
				}
			}
			if len(deltas) != len(lps) {
				t.Errorf("stream deltas list %d tokens, the response %d", len(deltas), len(lps))
			}
			for i := range min(len(deltas), len(lps)) {
				if deltas[i].Get("logprob").Float() != lps[i].Get("logprob").Float() {
					t.Errorf("delta token %d logprob %v, response %v", i, deltas[i].Get("logprob").Float(), lps[i].Get("logprob").Float())
				}
			}
			// The stored response keeps its logprobs; the conversation's stored items do not.
			resp, err := http.Get(base + "/v1/responses/" + final.Get("id").Str)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if n := len(gjson.GetBytes(got, `output.#(type=="message").content.0.logprobs`).Array()); n != len(lps) {
				t.Errorf("retrieved response lists %d logprobs, want %d", n, len(lps))
			}
			// A continuation of a response that carries logprobs renders its history as usual.
			status, b = postResponse(t, base, `{"model":"qwen3","input":"And the sky?","previous_response_id":"`+final.Get("id").Str+`"}`)
			if status != http.StatusOK || gjson.GetBytes(b, "status").Str != "completed" {
				t.Errorf("continuation: status %d: %.300s", status, b)
			}
		})
	}
	if texts["http"] != texts["grpc"] {
		t.Errorf("the transports answer differently:\nhttp %s\ngrpc %s", texts["http"], texts["grpc"])
	}

	// Out of range: 400 naming top_logprobs.
	status, b := postResponse(t, bases["http"], `{"model":"qwen3","input":"x","top_logprobs":21}`)
	if status != http.StatusBadRequest || gjson.GetBytes(b, "error.param").Str != "top_logprobs" {
		t.Errorf("top_logprobs 21: status %d: %s", status, b)
	}
}

// lpsKey is the tokens and values of a logprobs list, for comparing two answers.
func lpsKey(lps []gjson.Result) string {
	var b strings.Builder
	for _, lp := range lps {
		b.WriteString(lp.Get("token").Str + "=" + lp.Get("logprob").Raw + ";")
		for _, a := range lp.Get("top_logprobs").Array() {
			b.WriteString(a.Get("token").Str + ":" + a.Get("logprob").Raw + ",")
		}
	}
	return b.String()
}
