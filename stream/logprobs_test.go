package stream_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stitchllm/stitch/stream"
)

// fakeLogprob is the logprob the tests give generated token k (exact in float32).
func fakeLogprob(k int) float64 { return -float64(k+1) / 8 }

// fakeTop lists the sampled token first and then alternatives out of order, as vLLM does.
func fakeTop(k int, id uint32) []stream.TopLogprob {
	lp := fakeLogprob(k)
	return []stream.TopLogprob{{ID: id, Logprob: lp}, {ID: 100, Logprob: lp - 2}, {ID: 101, Logprob: lp + 0.5}, {ID: 102, Logprob: lp - 1}}
}

// TestLogprobsMapping runs outputs through the Qwen3 parser with logprobs on and checks what the
// Responses API promises: only message text gets logprobs; the final list's tokens concatenate to
// the message text, one entry per token, each carrying its own token's logprob; the delta events
// list every token once (no logprob counted twice); alternatives are sorted and capped.
func TestLogprobsMapping(t *testing.T) {
	tok := tokenizer(t)
	tests := []struct {
		name     string
		output   string // generated text, special tokens spelled out
		chunk    int    // ids per upstream chunk
		wantText string
		topN     int
		// every says each generated id but the end of turn is a token of the message text.
		every bool
	}{
		{"plain", "Hello world, how are you?<|im_end|>", 1, "Hello world, how are you?", 2, true},
		{"batched chunks", "Hello world, how are you?<|im_end|>", 3, "Hello world, how are you?", 3, true},
		{"reasoning first", "<think>\nLet me think.\n</think>\n\nThe answer is 42.<|im_end|>", 1, "The answer is 42.", 1, false},
		{"reasoning then multibyte", "<think>\nHm.\n</think>𝔘 ok<|im_end|>", 1, "𝔘 ok", 1, false},
		{"newlines inside", "line one\n\nline two\nline three\n<|im_end|>", 1, "line one\n\nline two\nline three\n", 2, false},
		{"multibyte", "naïve café 中文 𝔘𝔫𝔦 🙂!<|im_end|>", 1, "naïve café 中文 𝔘𝔫𝔦 🙂!", 2, true},
		{"text before a call", "Let me look.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call><|im_end|>", 2, "Let me look.", 0, false},
		{"top zero", "Hi there<|im_end|>", 1, "Hi there", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids := tok.EncodeWithSpecialTokens(tt.output)
			m := stream.NewLogprobMapper(tok.NewDecodeStream(), stream.LogprobOptions{TopN: tt.topN, TokenText: func(id uint32) string { return tok.Decode([]uint32{id}) }})
			p := mustQwen3Parser(t, tok, m.Decoder(), nil)
			c := stream.NewConverter(stream.ConverterOptions{Output: p, Logprobs: m, Emitter: stream.EmitterOptions{NewID: counterIDs(), Now: fixedNow}})
			var events []stream.Event
			events = c.Start(events)
			for i := 0; i < len(ids); i += tt.chunk {
				end := min(i+tt.chunk, len(ids))
				ch := &stream.Chunk{TokenIDs: ids[i:end]}
				for k := i; k < end; k++ {
					ch.Logprobs = append(ch.Logprobs, stream.TokenLogprob{ID: ids[k], Logprob: fakeLogprob(k), Top: fakeTop(k, ids[k])})
				}
				if end == len(ids) {
					ch.FinishReason = stream.FinishStop
				}
				events = c.Chunk(events, ch)
			}
			events = c.End(events)

			r := c.Response()
			var msg *stream.Item
			for i := range r.Output {
				if r.Output[i].Type == stream.ItemMessage {
					msg = &r.Output[i]
				}
				if r.Output[i].Type != stream.ItemMessage {
					for _, p := range r.Output[i].Content {
						if len(p.Logprobs) > 0 {
							t.Errorf("%s item has logprobs", r.Output[i].Type)
						}
					}
				}
			}
			if msg == nil {
				t.Fatalf("no message in %+v", r.Output)
			}
			part := msg.Content[0]
			if part.Text != tt.wantText {
				t.Fatalf("text = %q, want %q", part.Text, tt.wantText)
			}
			var joined strings.Builder
			for _, lp := range part.Logprobs {
				joined.WriteString(lp.Token)
				if len(lp.Top) > tt.topN {
					t.Errorf("%d alternatives, want at most %d", len(lp.Top), tt.topN)
				}
				for j := 1; j < len(lp.Top); j++ {
					if lp.Top[j].Logprob > lp.Top[j-1].Logprob {
						t.Errorf("alternatives not sorted: %+v", lp.Top)
					}
				}
				if tt.topN > 0 && len(lp.Top) != tt.topN {
					t.Errorf("%d alternatives, want %d", len(lp.Top), tt.topN)
				}
			}
			if part.Logprobs[0].Token == "" && !strings.ContainsRune(tt.wantText, '𝔘') {
				t.Errorf("first token contributes nothing: %+v", part.Logprobs[0])
			}
			if tt.every && len(part.Logprobs) != len(ids)-1 {
				t.Errorf("%d logprobs for %d message tokens", len(part.Logprobs), len(ids)-1)
			}
			if joined.String() != part.Text {
				t.Errorf("logprob tokens join to %q, want %q", joined.String(), part.Text)
			}
			// Each entry is its own token's: the logprobs are distinct and rise in magnitude.
			for j := 1; j < len(part.Logprobs); j++ {
				if part.Logprobs[j].Logprob >= part.Logprobs[j-1].Logprob {
					t.Errorf("entries %d and %d do not follow the tokens: %v then %v", j-1, j, part.Logprobs[j-1].Logprob, part.Logprobs[j].Logprob)
				}
			}
			var deltaText strings.Builder
			var deltaEntries []stream.Logprob
			for _, ev := range events {
				switch e := ev.(type) {
				case *stream.TextDeltaEvent:
					if e.Type == stream.EventOutputTextDelta {
						deltaText.WriteString(e.Delta)
						deltaEntries = append(deltaEntries, e.Logprobs...)
					} else if len(e.Logprobs) > 0 {
						t.Errorf("reasoning delta has logprobs")
					}
				case *stream.TextDoneEvent:
					if e.Type == stream.EventOutputTextDone && len(e.Logprobs) != len(part.Logprobs) {
						t.Errorf("output_text.done lists %d logprobs, the part %d", len(e.Logprobs), len(part.Logprobs))
					}
				}
			}
			if deltaText.String() != part.Text {
				t.Errorf("deltas join to %q", deltaText.String())
			}
			if len(deltaEntries) != len(part.Logprobs) {
				t.Errorf("deltas list %d tokens, the part %d", len(deltaEntries), len(part.Logprobs))
			}
			for j := range deltaEntries {
				if j < len(part.Logprobs) && deltaEntries[j].Logprob != part.Logprobs[j].Logprob {
					t.Errorf("delta entry %d logprob %v, part %v", j, deltaEntries[j].Logprob, part.Logprobs[j].Logprob)
				}
			}
			// The JSON is the SDK's shape: bytes are the token's UTF-8.
			var got struct {
				Logprobs []struct {
					Token   string  `json:"token"`
					Bytes   []byte  `json:"-"`
					Raw     []int   `json:"bytes"`
					Logprob float64 `json:"logprob"`
					Top     []struct {
						Token   string  `json:"token"`
						Raw     []int   `json:"bytes"`
						Logprob float64 `json:"logprob"`
					} `json:"top_logprobs"`
				} `json:"logprobs"`
			}
			if err := json.Unmarshal(part.AppendJSON(nil), &got); err != nil {
				t.Fatalf("part JSON: %v: %s", err, part.AppendJSON(nil))
			}
			for _, lp := range got.Logprobs {
				if len(lp.Raw) != len(lp.Token) {
					t.Errorf("token %q has %d bytes listed", lp.Token, len(lp.Raw))
				}
			}
		})
	}
}

// TestParseChunkLogprobs reads vLLM's completions logprobs object with return_tokens_as_token_ids.
func TestParseChunkLogprobs(t *testing.T) {
	data := `{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"Hi","logprobs":{"text_offset":[0,1],"token_logprobs":[-0.25,-1.5],"tokens":["token_id:39","token_id:72"],"top_logprobs":[{"token_id:39":-0.25,"token_id:40":-2.0},{"token_id:72":-1.5,"token_id:11":-0.5}]},"finish_reason":null,"stop_reason":null,"token_ids":[39,72]}],"usage":null}`
	var c stream.Chunk
	if err := stream.ParseChunk([]byte(data), &c); err != nil {
		t.Fatal(err)
	}
	if len(c.TokenIDs) != 2 || len(c.Logprobs) != 2 {
		t.Fatalf("ids %v logprobs %+v", c.TokenIDs, c.Logprobs)
	}
	if c.Logprobs[1].ID != 72 || c.Logprobs[1].Logprob != -1.5 || len(c.Logprobs[1].Top) != 2 || c.Logprobs[1].Top[1].ID != 11 {
		t.Errorf("logprobs[1] = %+v", c.Logprobs[1])
	}
	// Without logprobs the fast path still reads the chunk and lists none.
	if err := stream.ParseChunk([]byte(`{"id":"c","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"x","logprobs":null,"finish_reason":null,"stop_reason":null,"token_ids":[5]}],"usage":null}`), &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Logprobs) != 0 || len(c.TokenIDs) != 1 {
		t.Errorf("chunk without logprobs: %+v", c)
	}
}

// TestLogprobsHarmony: gpt-oss output (channels, headers, a preamble and a final message) gets
// logprobs on its messages' text only, each message's tokens joining to its text.
func TestLogprobsHarmony(t *testing.T) {
	tok := gptossTok(t)
	out := "<|channel|>analysis<|message|>Need weather.<|end|>" +
		"<|start|>assistant<|channel|>commentary<|message|>Checking the weather.<|end|>" +
		"<|start|>assistant<|channel|>final<|message|>It is sunny in Paris, 21 °C — enjoy!<|return|>"
	ids := tok.Encode(out)
	m := stream.NewLogprobMapper(tok.NewDecodeStream(), stream.LogprobOptions{TopN: 1, TokenText: func(id uint32) string { return tok.Decode([]uint32{id}) }})
	p := stream.NewHarmonyParser(m.Decoder(), stream.HarmonyOptions{Tokens: harmonyTokens})
	c := stream.NewConverter(stream.ConverterOptions{Output: p, Logprobs: m, Emitter: stream.EmitterOptions{NewID: counterIDs(), Now: fixedNow}})
	for k, id := range ids {
		c.Chunk(nil, &stream.Chunk{TokenIDs: []uint32{id}, Logprobs: []stream.TokenLogprob{{ID: id, Logprob: fakeLogprob(k), Top: fakeTop(k, id)}}})
	}
	c.End(nil)
	r := c.Response()
	messages := 0
	for _, it := range r.Output {
		for _, part := range it.Content {
			if it.Type != stream.ItemMessage {
				if len(part.Logprobs) > 0 {
					t.Errorf("%s has logprobs", it.Type)
				}
				continue
			}
			messages++
			var joined strings.Builder
			for _, lp := range part.Logprobs {
				joined.WriteString(lp.Token)
			}
			if joined.String() != part.Text || len(part.Logprobs) == 0 || part.Logprobs[0].Token == "" {
				t.Errorf("message %q: logprobs %+v", part.Text, part.Logprobs)
			}
		}
	}
	if messages != 2 {
		t.Errorf("%d messages, want 2: %+v", messages, r.Output)
	}
}

// FuzzLogprobsJoin: whatever the model writes (reasoning, calls, broken markup, any Unicode) and
// however it is chunked, every message's logprob tokens join to its text, and the stream's deltas
// list as many tokens as the final message.
func FuzzLogprobsJoin(f *testing.F) {
	f.Add("Hello\n\nworld\n", uint8(1))
	f.Add("<think>\nhm\n</think>\n\n𝔘 é 中<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>after", uint8(2))
	f.Add("<tool_call>\n{\"name\": oops</tool_call> text", uint8(3))
	f.Add("\n\n\n", uint8(1))
	f.Fuzz(func(t *testing.T, out string, chunk uint8) {
		tok := tokenizer(t)
		ids := tok.Encode(out)
		if len(ids) > 2000 {
			return
		}
		step := max(int(chunk%5), 1)
		m := stream.NewLogprobMapper(tok.NewDecodeStream(), stream.LogprobOptions{TopN: 2, TokenText: func(id uint32) string { return tok.Decode([]uint32{id}) }})
		c := stream.NewConverter(stream.ConverterOptions{Output: mustQwen3Parser(t, tok, m.Decoder(), nil), Logprobs: m,
			Emitter: stream.EmitterOptions{NewID: counterIDs(), Now: fixedNow}})
		var events []stream.Event
		for i := 0; i < len(ids); i += step {
			end := min(i+step, len(ids))
			ch := &stream.Chunk{TokenIDs: ids[i:end]}
			for k := i; k < end; k++ {
				ch.Logprobs = append(ch.Logprobs, stream.TokenLogprob{ID: ids[k], Logprob: fakeLogprob(k), Top: fakeTop(k, ids[k])})
			}
			events = c.Chunk(events, ch)
		}
		events = c.End(events)
		deltas := map[string]int{}
		for _, ev := range events {
			if d, ok := ev.(*stream.TextDeltaEvent); ok && d.Type == stream.EventOutputTextDelta {
				deltas[d.ItemID] += len(d.Logprobs)
			}
		}
		for _, it := range c.Response().Output {
			if it.Type != stream.ItemMessage {
				continue
			}
			var joined strings.Builder
			for _, lp := range it.Content[0].Logprobs {
				joined.WriteString(lp.Token)
			}
			if joined.String() != it.Content[0].Text {
				t.Fatalf("tokens join to %q, text %q", joined.String(), it.Content[0].Text)
			}
			if deltas[it.ID] != len(it.Content[0].Logprobs) {
				t.Fatalf("deltas list %d tokens, the message %d", deltas[it.ID], len(it.Content[0].Logprobs))
			}
		}
	})
}
