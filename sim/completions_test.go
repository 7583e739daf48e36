package sim_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stitchllm/stitch/sim"
)

// streamChunk is one /v1/completions stream event.
type streamChunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Choices []struct {
		Index          int      `json:"index"`
		Text           string   `json:"text"`
		FinishReason   *string  `json:"finish_reason"`
		StopReason     any      `json:"stop_reason"`
		TokenIDs       []uint32 `json:"token_ids"`
		PromptTokenIDs []uint32 `json:"prompt_token_ids"`
	} `json:"choices"`
	Usage *usage `json:"usage"`
}

// collected is a whole stream, put back together.
type collected struct {
	prompt []uint32
	ids    []uint32
	text   string
	finish string
	stop   any
	usage  *usage
}

func collect(t *testing.T, events []string) collected {
	t.Helper()
	if len(events) == 0 || events[len(events)-1] != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]: %q", events)
	}
	var c collected
	for i, e := range events[:len(events)-1] {
		var ch streamChunk
		if err := json.Unmarshal([]byte(e), &ch); err != nil {
			t.Fatalf("chunk %d %q: %v", i, e, err)
		}
		if ch.Object != "text_completion" {
			t.Errorf("chunk %d object %q", i, ch.Object)
		}
		if ch.Usage != nil && len(ch.Choices) == 0 {
			c.usage = ch.Usage
			if i != len(events)-2 {
				t.Errorf("usage chunk %d is not the last before [DONE]", i)
			}
			continue
		}
		if len(ch.Choices) != 1 {
			t.Fatalf("chunk %d has %d choices", i, len(ch.Choices))
		}
		choice := ch.Choices[0]
		if i == 0 {
			c.prompt = choice.PromptTokenIDs
		} else if choice.PromptTokenIDs != nil {
			t.Errorf("chunk %d repeats prompt_token_ids", i)
		}
		if c.finish != "" {
			t.Errorf("chunk %d after the finish chunk", i)
		}
		c.ids = append(c.ids, choice.TokenIDs...)
		c.text += choice.Text
		if choice.FinishReason != nil {
			c.finish, c.stop = *choice.FinishReason, choice.StopReason
		}
	}
	return c
}

func TestStreamEqualsNonStream(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t, sim.Options{OutputLen: 40})
	prompts := map[string]string{
		"chat thinking":  qwenChat(nil, true, [2]string{"user", "Tell me about rivers."}),
		"chat no think":  qwenChat(nil, false, [2]string{"user", "Tell me about rivers."}),
		"raw text":       "Once upon a time",
		"unicode prompt": qwenChat(nil, false, [2]string{"user", "Grüße, 世界 🌍"}),
	}
	for name, p := range prompts {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			promptIDs := ids(t, p)
			for _, maxTokens := range []int{1, 7, 500} {
				body := func() map[string]any {
					return map[string]any{"model": "qwen3", "prompt": promptIDs, "max_tokens": maxTokens,
						"return_token_ids": true, "seed": 7, "cache_salt": "tenant-a"}
				}
				nb := body()
				ns := complete(t, ts.URL, nb)
				sb := body()
				sb["stream_options"] = map[string]any{"include_usage": true}
				st := collect(t, streamCompletion(t, ts.URL, sb))
				c := ns.Choices[0]
				if diff := cmp.Diff(c.TokenIDs, st.ids); diff != "" {
					t.Errorf("max_tokens %d: stream ids differ from non-stream (-non +stream):\n%s", maxTokens, diff)
				}
				if !slices.Equal(c.PromptTokenIDs, promptIDs) || !slices.Equal(st.prompt, promptIDs) {
					t.Errorf("max_tokens %d: prompt ids not echoed exactly", maxTokens)
				}
				if c.Text != st.text || c.FinishReason != st.finish {
					t.Errorf("max_tokens %d: non-stream (%q, %s) != stream (%q, %s)", maxTokens, c.Text, c.FinishReason, st.text, st.finish)
				}
				if len(c.TokenIDs) > maxTokens {
					t.Errorf("max_tokens %d: got %d tokens", maxTokens, len(c.TokenIDs))
				}
				wantFinish := "stop"
				if len(c.TokenIDs) == maxTokens && !slices.Contains([]uint32{151645, 151643}, c.TokenIDs[len(c.TokenIDs)-1]) {
					wantFinish = "length"
				}
				if c.FinishReason != wantFinish {
					t.Errorf("max_tokens %d: finish %q, want %q", maxTokens, c.FinishReason, wantFinish)
				}
				if st.usage == nil || st.usage.CompletionTokens != len(st.ids) || st.usage.PromptTokens != len(promptIDs) ||
					st.usage.TotalTokens != len(promptIDs)+len(st.ids) {
					t.Errorf("max_tokens %d: stream usage %+v for %d+%d tokens", maxTokens, st.usage, len(promptIDs), len(st.ids))
				}
			}
		})
	}
}

func TestDeterministicAcrossServers(t *testing.T) {
	t.Parallel()
	_, a := newTestServer(t, sim.Options{Seed: 3})
	_, b := newTestServer(t, sim.Options{Seed: 3})
	_, c := newTestServer(t, sim.Options{Seed: 4})
	prompt := ids(t, qwenChat(nil, true, [2]string{"user", "hello"}))
	body := func() map[string]any {
		return map[string]any{"prompt": prompt, "max_tokens": 200, "return_token_ids": true}
	}
	ra, rb, rc := complete(t, a.URL, body()), complete(t, b.URL, body()), complete(t, c.URL, body())
	if !slices.Equal(ra.Choices[0].TokenIDs, rb.Choices[0].TokenIDs) {
		t.Errorf("same --seed and prompt gave different outputs")
	}
	if slices.Equal(ra.Choices[0].TokenIDs, rc.Choices[0].TokenIDs) {
		t.Errorf("different seeds gave the same output")
	}
}

func TestStreamWithoutTokenIDs(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t, sim.Options{})
	events := streamCompletion(t, ts.URL, map[string]any{"prompt": "hi", "max_tokens": 3})
	if len(events) != 4 { // three tokens, [DONE]; no usage chunk without stream_options
		t.Fatalf("got %d events: %q", len(events), events)
	}
	for _, e := range events[:3] {
		if !strings.HasSuffix(e, `"prompt_token_ids":null,"token_ids":null}]}`) {
			t.Errorf("chunk %s: want null ids and no usage", e)
		}
	}
	want := `{"index":0,"text":`
	if !strings.Contains(events[0], want) || !strings.HasPrefix(events[0], `{"id":"cmpl-`) {
		t.Errorf("first chunk %s lacks vLLM's layout", events[0])
	}
}

func TestStopConditions(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t, sim.Options{OutputLen: 200})
	prompt := ids(t, qwenChat(nil, false, [2]string{"user", "Say something."}))
	base := complete(t, ts.URL, map[string]any{"prompt": prompt, "max_tokens": 1000, "return_token_ids": true}).Choices[0]
	if base.FinishReason != "stop" || base.StopReason != nil {
		t.Fatalf("base answer: finish %q stop_reason %v", base.FinishReason, base.StopReason)
	}
	if last := base.TokenIDs[len(base.TokenIDs)-1]; last != 151645 {
		t.Fatalf("base answer ends with %d, want <|im_end|>", last)
	}
	// A stop string from the middle of the text.
	words := strings.Fields(base.Text)
	stop := " " + words[len(words)/2]
	cut := strings.Index(base.Text, stop)
	t.Run("stop string", func(t *testing.T) {
		for _, stream := range []bool{false, true} {
			body := map[string]any{"prompt": prompt, "max_tokens": 1000, "return_token_ids": true, "stop": []string{"zzz-never", stop}}
			var text, finish string
			var reason any
			var got []uint32
			if stream {
				c := collect(t, streamCompletion(t, ts.URL, body))
				text, finish, reason, got = c.text, c.finish, c.stop, c.ids
			} else {
				c := complete(t, ts.URL, body).Choices[0]
				text, finish, reason, got = c.Text, c.FinishReason, c.StopReason, c.TokenIDs
			}
			if text != base.Text[:cut] || finish != "stop" || reason != stop {
				t.Errorf("stream=%v: text %q finish %q reason %v; want %q stop %q", stream, text, finish, reason, base.Text[:cut], stop)
			}
			if !slices.Equal(got, base.TokenIDs[:len(got)]) || len(got) >= len(base.TokenIDs) {
				t.Errorf("stream=%v: ids are not a proper prefix of the full answer", stream)
			}
		}
	})
	t.Run("stop token id", func(t *testing.T) {
		stopID := base.TokenIDs[5]
		c := complete(t, ts.URL, map[string]any{"prompt": prompt, "max_tokens": 1000, "return_token_ids": true, "stop_token_ids": []uint32{stopID}}).Choices[0]
		i := slices.Index(base.TokenIDs, stopID)
		if !slices.Equal(c.TokenIDs, base.TokenIDs[:i+1]) || c.FinishReason != "stop" || c.StopReason != float64(stopID) {
			t.Errorf("got %v %q %v, want ids up to and including %d", c.TokenIDs, c.FinishReason, c.StopReason, stopID)
		}
	})
	t.Run("default max_tokens is 16", func(t *testing.T) {
		c := complete(t, ts.URL, map[string]any{"prompt": prompt, "return_token_ids": true}).Choices[0]
		if len(c.TokenIDs) != 16 || c.FinishReason != "length" {
			t.Errorf("got %d tokens, finish %q", len(c.TokenIDs), c.FinishReason)
		}
	})
	t.Run("ignore_eos runs to max_tokens", func(t *testing.T) {
		c := complete(t, ts.URL, map[string]any{"prompt": prompt, "max_tokens": len(base.TokenIDs) + 50, "ignore_eos": true, "return_token_ids": true}).Choices[0]
		if len(c.TokenIDs) != len(base.TokenIDs)+50 || c.FinishReason != "length" {
			t.Errorf("got %d tokens finish %q, want %d length", len(c.TokenIDs), c.FinishReason, len(base.TokenIDs)+50)
		}
	})
}

func TestBatchedPrompts(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t, sim.Options{})
	c := complete(t, ts.URL, map[string]any{"prompt": []any{"first prompt", []int{104, 105}}, "max_tokens": 4, "return_token_ids": true})
	if len(c.Choices) != 2 || c.Choices[1].Index != 1 || !slices.Equal(c.Choices[1].PromptTokenIDs, []uint32{104, 105}) {
		t.Fatalf("choices %+v", c.Choices)
	}
	if c.Usage.PromptTokens != len(ids(t, "first prompt"))+2 || c.Usage.CompletionTokens != 8 {
		t.Errorf("usage %+v", c.Usage)
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t, sim.Options{MaxModelLen: 100})
	long := make([]int, 101)
	tests := []struct {
		name   string
		body   string
		status int
		param  string
	}{
		{"unknown model", `{"model":"gpt-9","prompt":"x"}`, 404, "model"},
		{"prompt too long", mustJSON(map[string]any{"prompt": long}), 400, "input_tokens"},
		{"max_tokens past context", `{"prompt":[1,2,3],"max_tokens":98}`, 400, "input_tokens"},
		{"max_tokens over max_model_len", `{"prompt":[1,2,3],"max_tokens":101}`, 400, "max_tokens"},
		{"max_tokens zero", `{"prompt":[1],"max_tokens":0}`, 400, "max_tokens"},
		{"no prompt", `{"max_tokens":3}`, 400, "prompt"},
		{"empty prompt", `{"prompt":[]}`, 400, "prompt"},
		{"bad token", `{"prompt":[1,-2]}`, 400, "prompt"},
		{"token out of vocabulary", `{"prompt":[999999999]}`, 400, "prompt"},
		{"bad temperature", `{"prompt":"x","temperature":-1}`, 400, "temperature"},
		{"empty salt", `{"prompt":"x","cache_salt":""}`, 400, "cache_salt"},
		{"stream options without stream", `{"prompt":"x","stream_options":{"include_usage":true}}`, 400, "stream_options"},
		{"not json", `{"prompt":`, 400, ""},
		{"bad stop", `{"prompt":"x","stop":[1]}`, 400, "stop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, out := post(t, ts.URL+"/v1/completions", tt.body)
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Param   *string `json:"param"`
					Code    int     `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(out, &e); err != nil {
				t.Fatalf("error body %s: %v", out, err)
			}
			param := ""
			if e.Error.Param != nil {
				param = *e.Error.Param
			}
			if status != tt.status || e.Error.Code != tt.status || param != tt.param || e.Error.Message == "" || e.Error.Type == "" {
				t.Errorf("POST %s = %d %s, want %d with param %q", tt.body, status, out, tt.status, tt.param)
			}
		})
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestModelsHealthTokenize(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t, sim.Options{ServedModelName: "demo", MaxModelLen: 4096})
	resp, err := http.Get(ts.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var models struct {
		Object string `json:"object"`
		Data   []struct {
			ID          string `json:"id"`
			Object      string `json:"object"`
			OwnedBy     string `json:"owned_by"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&models); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if models.Object != "list" || len(models.Data) != 1 || models.Data[0].ID != "demo" || models.Data[0].MaxModelLen != 4096 || models.Data[0].OwnedBy != "vllm" {
		t.Errorf("models = %+v", models)
	}
	resp, err = http.Get(ts.URL + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("health: %v %v", resp, err)
	}
	resp.Body.Close()

	hi := ids(t, "hi <|im_end|>")
	status, out := post(t, ts.URL+"/tokenize", `{"model":"demo","prompt":"hi <|im_end|>"}`)
	want := fmt.Sprintf(`{"count":%d,"max_model_len":4096,"tokens":%s,"token_strs":null}`, len(hi), mustJSON(hi))
	if status != 200 || string(out) != want {
		t.Errorf("tokenize = %d %s, want %s", status, out, want)
	}
	status, out = post(t, ts.URL+"/detokenize", `{"model":"demo","tokens":`+mustJSON(hi)+`}`)
	if want := `{"prompt":"hi <|im_end|>"}`; status != 200 || string(out) != want {
		t.Errorf("detokenize = %d %s, want %s", status, out, want)
	}
	status, _ = post(t, ts.URL+"/tokenize", `{"messages":[{"role":"user","content":"x"}]}`)
	if status != http.StatusNotImplemented {
		t.Errorf("chat tokenize without renderer = %d, want 501", status)
	}
	status, _ = post(t, ts.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`)
	if status != http.StatusNotImplemented {
		t.Errorf("chat completions without renderer = %d, want 501", status)
	}
}
