package sim_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stitchllm/stitch/sim"
)

// TestStrictValidation pins vLLM's validation errors verbatim, for the newest layout and for 0.11.
func TestStrictValidation(t *testing.T) {
	t.Parallel()
	newest := sim.Options{MaxModelLen: 100}
	legacy := sim.Options{MaxModelLen: 100, Layout: sim.Layout011}
	qwenVocab := sim.Options{MaxModelLen: 100, VocabSize: 151936} // Qwen3's config.json vocab_size
	long := mustJSON(map[string]any{"prompt": make([]int, 90)})
	tests := []struct {
		name   string
		opts   sim.Options
		body   string
		status int
		param  string
		msg    string // exact message; "" skips the check
	}{
		{"context", newest, long, 400, "input_tokens",
			"You passed 90 input tokens and requested 16 output tokens. However, the model's context length is only 100 tokens, resulting in a maximum input length of 84 tokens. Please reduce the length of the input prompt. (parameter=input_tokens, value=90)"},
		{"context 0.11", legacy, long, 400, "max_tokens",
			"'max_tokens' or 'max_completion_tokens' is too large: 16. This model's maximum context length is 100 tokens and your request has 90 input tokens (16 > 100 - 90)."},
		{"max_tokens over context", newest, `{"prompt":[1],"max_tokens":101}`, 400, "max_tokens",
			"max_tokens=101 cannot be greater than max_model_len=100. Please request fewer output tokens. (parameter=max_tokens, value=101)"},
		{"max_tokens null means 16", newest, mustJSON(map[string]any{"prompt": make([]int, 85), "max_tokens": nil}), 400, "input_tokens", ""},
		{"max_tokens null fills the context in 0.11", legacy, mustJSON(map[string]any{"prompt": make([]int, 85), "max_tokens": nil}), 200, "", ""},
		{"salt of 128 characters", newest, mustJSON(map[string]any{"prompt": "x", "max_tokens": 1, "cache_salt": strings.Repeat("é", 128)}), 200, "", ""},
		{"salt of 129 characters", newest, mustJSON(map[string]any{"prompt": "x", "cache_salt": strings.Repeat("a", 129)}), 400, "cache_salt",
			`Parameter 'cache_salt' must be at most 128 characters and must not contain '@', '/', '\\', or NUL.`},
		{"salt with @", newest, `{"prompt":"x","cache_salt":"alice@corp"}`, 400, "cache_salt", ""},
		{"salt with /", newest, `{"prompt":"x","cache_salt":"a/b"}`, 400, "cache_salt", ""},
		{"salt with backslash", newest, `{"prompt":"x","cache_salt":"a\\b"}`, 400, "cache_salt", ""},
		{"salt with NUL", newest, `{"prompt":"x","cache_salt":"a\u0000b"}`, 400, "cache_salt", ""},
		{"salt with @ in 0.11", legacy, `{"prompt":"x","max_tokens":1,"cache_salt":"alice@corp"}`, 200, "", ""},
		{"salt not a string", newest, `{"prompt":"x","cache_salt":7}`, 400, "cache_salt",
			"Parameter 'cache_salt' must be a non-empty string if provided."},
		{"id at tokenizer max", newest, `{"prompt":[151668],"max_tokens":1}`, 200, "", ""},
		{"id above tokenizer max", newest, `{"prompt":[151669],"max_tokens":1}`, 400, "prompt", "Token id 151669 is out of vocabulary"},
		{"id inside the model vocab", qwenVocab, `{"prompt":[151935],"max_tokens":1}`, 200, "", ""},
		{"id above the model vocab", qwenVocab, `{"prompt":[151936],"max_tokens":1}`, 400, "prompt", ""},
		{"stop id out of the vocab", newest, `{"prompt":"x","stop_token_ids":[151645,151669,-1]}`, 400, "stop_token_ids",
			"token_id(s) [151669, -1] in stop_token_ids contain out-of-vocab token ids. Vocabulary size: 151669 (parameter=stop_token_ids, value=[151669, -1])"},
		{"stop id inside the model vocab", qwenVocab, `{"prompt":"x","max_tokens":1,"stop_token_ids":[151935]}`, 200, "", ""},
		{"empty prompt string", newest, `{"prompt":""}`, 400, "prompt", "Either prompt or prompt_embeds must be provided and non-empty."},
		{"no prompt 0.11", legacy, `{}`, 400, "prompt", "At least one of `prompt` or `prompt_embeds` must be set."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, ts := newTestServer(t, tt.opts)
			status, out := post(t, ts.URL+"/v1/completions", tt.body)
			if status != tt.status {
				t.Fatalf("POST %.80s = %d %s, want %d", tt.body, status, out, tt.status)
			}
			if status == 200 {
				return
			}
			var e struct {
				Error struct {
					Message string `json:"message"`
					Type    string `json:"type"`
					Param   string `json:"param"`
				} `json:"error"`
			}
			if err := json.Unmarshal(out, &e); err != nil {
				t.Fatal(err)
			}
			// Request-model validators answer with type "Bad Request" (newest vLLM's
			// RequestValidationError handler), serving-time checks with "BadRequestError".
			wantType := "BadRequestError"
			if (tt.param == "cache_salt" || tt.name == "empty prompt string") && tt.opts.Layout == "" {
				wantType = "Bad Request"
			}
			if e.Error.Type != wantType {
				t.Errorf("type %q, want %q", e.Error.Type, wantType)
			}
			if e.Error.Param != tt.param || (tt.msg != "" && e.Error.Message != tt.msg) {
				t.Errorf("error param %q message\n%s\nwant %q\n%s", e.Error.Param, e.Error.Message, tt.param, tt.msg)
			}
		})
	}
}

// TestLayouts pins the stream and usage shapes of the newest vLLM and of 0.11.
func TestLayouts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		layout           string
		chunkSuffix      string // how a content chunk without usage ends
		usageNoCache     string // the usage chunk's prompt_tokens_details on a cold prompt
		continuousSuffix string
	}{
		{"", `"token_ids":null}]}`, `"prompt_tokens_details":{"cached_tokens":0}}`, `"completion_tokens":1}}`},
		{sim.Layout011, `"token_ids":null}],"usage":null}`, `"prompt_tokens_details":null}`, `"completion_tokens":1,"prompt_tokens_details":null}}`},
	}
	for _, tt := range tests {
		t.Run("layout="+tt.layout, func(t *testing.T) {
			t.Parallel()
			_, ts := newTestServer(t, sim.Options{Layout: tt.layout})
			events := streamCompletion(t, ts.URL, map[string]any{"prompt": "hi", "max_tokens": 2, "stream": true,
				"stream_options": map[string]any{"include_usage": true}})
			if len(events) != 4 {
				t.Fatalf("events %q", events)
			}
			if !strings.HasSuffix(events[0], tt.chunkSuffix) {
				t.Errorf("chunk %s: want suffix %s", events[0], tt.chunkSuffix)
			}
			if !strings.HasSuffix(events[2], tt.usageNoCache+"}") || !strings.Contains(events[2], `"choices":[],"usage":{`) {
				t.Errorf("usage chunk %s: want suffix %s", events[2], tt.usageNoCache)
			}
			events = streamCompletion(t, ts.URL, map[string]any{"prompt": "hey", "max_tokens": 1, "stream": true,
				"stream_options": map[string]any{"include_usage": true, "continuous_usage_stats": true}})
			if !strings.HasSuffix(events[0], tt.continuousSuffix) {
				t.Errorf("continuous chunk %s: want suffix %s", events[0], tt.continuousSuffix)
			}
			_, ct := post(t, ts.URL+"/v1/completions", map[string]any{"prompt": "ho", "max_tokens": 1})
			if !strings.Contains(string(ct), strings.TrimSuffix(tt.usageNoCache, "}")) {
				t.Errorf("non-stream %s: want %s", ct, tt.usageNoCache)
			}
		})
	}
}

func TestBadLayout(t *testing.T) {
	t.Parallel()
	if _, err := sim.New(sim.Options{Tokenizer: byteTokenizer, Layout: "0.9"}); err == nil {
		t.Fatal("layout 0.9 accepted")
	}
}
