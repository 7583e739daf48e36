package sim_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/sim"
)

// TestLogprobs: /v1/completions with logprobs: N answers vLLM's CompletionLogProbs, deterministic,
// with real token strings (or "token_id:N" with return_tokens_as_token_ids), negative values, and
// per token a dict of the sampled token and the top N; the stream's logprobs concatenate to the
// non-stream ones; more than --max-logprobs (20) is a 400.
func TestLogprobs(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t, sim.Options{OutputLen: 30, StreamInterval: 3})
	prompt := ids(t, qwenChat(nil, false, [2]string{"user", "Tell me about rivers."}))
	body := func(asIDs bool) map[string]any {
		return map[string]any{"model": "qwen3", "prompt": prompt, "max_tokens": 50, "return_token_ids": true, "seed": 3,
			"logprobs": 3, "return_tokens_as_token_ids": asIDs}
	}
	for _, asIDs := range []bool{false, true} {
		c := complete(t, ts.URL, body(asIDs))
		_, raw := post(t, ts.URL+"/v1/completions", body(asIDs))
		lp := gjson.GetBytes(raw, "choices.0.logprobs")
		tokens, values, tops := lp.Get("tokens").Array(), lp.Get("token_logprobs").Array(), lp.Get("top_logprobs").Array()
		ids := c.Choices[0].TokenIDs
		if len(tokens) != len(ids) || len(values) != len(ids) || len(tops) != len(ids) || len(lp.Get("text_offset").Array()) != len(ids) {
			t.Fatalf("logprobs of %d tokens: %s", len(ids), lp.Raw)
		}
		for i, tok := range tokens {
			if asIDs && tok.Str != "token_id:"+strconv.FormatUint(uint64(ids[i]), 10) {
				t.Errorf("token %d = %q, want token_id:%d", i, tok.Str, ids[i])
			}
			if v := values[i].Float(); v > 0 {
				t.Errorf("logprob %v > 0", v)
			}
			top := tops[i].Map()
			if n := len(top); n < 3 || n > 4 || top[tok.Str].Float() != values[i].Float() {
				t.Errorf("top_logprobs[%d] = %s (token %q)", i, tops[i].Raw, tok.Str)
			}
		}
		// Streamed: the chunks' logprobs concatenate to the non-stream answer's.
		var streamed []string
		for _, ev := range streamCompletion(t, ts.URL, body(asIDs)) {
			for _, v := range gjson.Get(ev, "choices.0.logprobs.token_logprobs").Array() {
				streamed = append(streamed, v.Raw)
			}
		}
		var whole []string
		for _, v := range values {
			whole = append(whole, v.Raw)
		}
		if diff := cmp.Diff(whole, streamed); diff != "" {
			t.Errorf("stream logprobs differ (-non-stream +stream):\n%s", diff)
		}
	}
	b := body(true)
	b["logprobs"] = 21
	if status, out := post(t, ts.URL+"/v1/completions", b); status != http.StatusBadRequest || gjson.GetBytes(out, "error.param").Str != "logprobs" {
		t.Errorf("logprobs 21: %d %s", status, out)
	}
}
