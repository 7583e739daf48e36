package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCompletionRequestAppendJSON(t *testing.T) {
	seed := int64(7)
	tests := []struct {
		name string
		req  CompletionRequest
		want string
	}{
		{"minimal", CompletionRequest{Model: "qwen3", Prompt: []uint32{1, 2}, MaxTokens: 16},
			`{"model":"qwen3","prompt":[1,2],"max_tokens":16}`},
		{"encoded prefix", CompletionRequest{Model: "qwen3", Prompt: []uint32{1, 2, 3}, PromptPrefix: []byte("1,2,"), PromptPrefixIDs: 2, MaxTokens: 16},
			`{"model":"qwen3","prompt":[1,2,3],"max_tokens":16}`},
		{"encoded prompt", CompletionRequest{Model: "qwen3", Prompt: []uint32{1, 2}, PromptPrefix: []byte("1,2,"), PromptPrefixIDs: 2, MaxTokens: 16},
			`{"model":"qwen3","prompt":[1,2],"max_tokens":16}`},
		{"prefix ids beyond the prompt", CompletionRequest{Model: "qwen3", Prompt: []uint32{1, 2}, PromptPrefix: []byte("1,2,3,"), PromptPrefixIDs: 3, MaxTokens: 16},
			`{"model":"qwen3","prompt":[1,2],"max_tokens":16}`},
		{"empty prompt", CompletionRequest{Model: "qwen3", MaxTokens: 16}, `{"model":"qwen3","prompt":[],"max_tokens":16}`},
		{"token path", CompletionRequest{Model: "qwen3", Prompt: []uint32{151644, 0}, MaxTokens: 100,
			Temperature: json.RawMessage(`0.70`), TopP: json.RawMessage(`1e-07`), Stream: true, IncludeUsage: true,
			ReturnTokenIDs: true, StopTokenIDs: []uint32{151645, 151643}, CacheSalt: "t\"x", Seed: &seed,
			StructuredOutputs: json.RawMessage(`{"json":{"type":"object"}}`)},
			`{"model":"qwen3","prompt":[151644,0],"max_tokens":100,"temperature":0.70,"top_p":1e-07,"stream":true,` +
				`"stream_options":{"include_usage":true},"return_token_ids":true,"stop_token_ids":[151645,151643],` +
				`"cache_salt":"t\"x","structured_outputs":{"json":{"type":"object"}},"seed":7}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(tt.req.AppendJSON(nil))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("AppendJSON mismatch (-want +got):\n%s", diff)
			}
			if parts := string(bytes.Join(tt.req.Parts(), nil)); parts != got {
				t.Errorf("Parts = %s, want AppendJSON's %s", parts, got)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("AppendJSON produced invalid JSON: %s", got)
			}
		})
	}
}

func BenchmarkCompletionRequestAppendJSON(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		ids := make([]uint32, n)
		for i := range ids {
			ids[i] = uint32(i*7919) % 151643
		}
		req := CompletionRequest{Model: "qwen3", Prompt: ids, MaxTokens: 1024, Stream: true, ReturnTokenIDs: true}
		b.Run(fmt.Sprintf("tokens=%dk", n/1000), func(b *testing.B) {
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				buf = req.AppendJSON(buf[:0])
			}
			b.SetBytes(int64(len(buf)))
		})
	}
}
