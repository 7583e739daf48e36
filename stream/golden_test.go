package stream_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/stitchllm/stitch/render/bpe"
	"github.com/stitchllm/stitch/stream"
)

// Regenerate with: go test ./stream -run TestGolden -update
// A case with an "output" in spec.json gets its input.sse rewritten from the
// spec (real Qwen3 ids from render/bpe, vLLM's chunk format); a case without
// one keeps its hand-written input.sse. Then every expected section is
// rewritten. Review the diff.
var update = flag.Bool("update", false, "rewrite stream/testdata/*.txtar expected sections (and generated inputs)")

// caseSpec describes one golden case.
type caseSpec struct {
	ThinkingOpen      bool  `json:"thinking_open"`
	ParallelToolCalls *bool `json:"parallel_tool_calls"` // default true

	// Generation of input.sse (only when Output is set).
	Prompt       string          `json:"prompt"`        // rendered prompt text; default a short user turn
	Output       string          `json:"output"`        // generated text, special tokens included
	Chunking     []int           `json:"chunking"`      // ids per chunk, cycled; default [1]
	FinishReason string          `json:"finish_reason"` // default "stop"
	StopReason   json.RawMessage `json:"stop_reason"`   // default null
	CachedTokens int             `json:"cached_tokens"`
	ErrorAfter   int             `json:"error_after"` // chunks before an in-stream error (0: none)
	NoUsage      bool            `json:"no_usage"`
	NoDone       bool            `json:"no_done"` // cut the stream before data: [DONE]
}

func (s *caseSpec) parallel() bool { return s.ParallelToolCalls == nil || *s.ParallelToolCalls }

const defaultPrompt = "<|im_start|>user\nWhat is the weather in Paris?<|im_end|>\n<|im_start|>assistant\n"

// vllmChoice and vllmChunk mirror vLLM's CompletionStreamResponse field order.
type vllmChoice struct {
	Index          int             `json:"index"`
	Text           string          `json:"text"`
	Logprobs       *int            `json:"logprobs"`
	FinishReason   *string         `json:"finish_reason"`
	StopReason     json.RawMessage `json:"stop_reason"`
	TokenIDs       []uint32        `json:"token_ids"`
	PromptTokenIDs []uint32        `json:"prompt_token_ids"`
}

type vllmUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	TotalTokens         int `json:"total_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

type vllmChunk struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []vllmChoice `json:"choices"`
	Usage   *vllmUsage   `json:"usage"`
}

func writeData(b *bytes.Buffer, v any) {
	var j bytes.Buffer
	enc := json.NewEncoder(&j)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	b.WriteString("data: ")
	b.Write(bytes.TrimRight(j.Bytes(), "\n"))
	b.WriteString("\n\n")
}

// genInput renders spec as the SSE body vLLM would send for it.
func genInput(tok *bpe.Tokenizer, spec *caseSpec) string {
	prompt := spec.Prompt
	if prompt == "" {
		prompt = defaultPrompt
	}
	promptIDs := tok.Encode(prompt)
	out := tok.Encode(spec.Output)
	pattern := spec.Chunking
	if len(pattern) == 0 {
		pattern = []int{1}
	}
	finish := spec.FinishReason
	if finish == "" {
		finish = "stop"
	}
	stopReason := spec.StopReason
	if len(stopReason) == 0 {
		stopReason = json.RawMessage("null")
	}
	var b bytes.Buffer
	ds := tok.NewDecodeStream()
	base := vllmChunk{ID: "cmpl-5f0c1e2d3b4a49c8a7e6d5c4b3a29180", Object: "text_completion", Created: 1767225600, Model: "qwen3"}
	for i, n := 0, 0; n < len(out); i++ {
		if spec.ErrorAfter > 0 && i == spec.ErrorAfter {
			b.WriteString(`data: {"error": {"message": "EngineCore encountered an issue. See stack trace (above) for the root cause.", "type": "InternalServerError", "param": null, "code": 500}}` + "\n\n")
			b.WriteString("data: [DONE]\n\n")
			return b.String()
		}
		k := min(pattern[i%len(pattern)], len(out)-n)
		ids := out[n : n+k]
		n += k
		var text strings.Builder
		for _, id := range ids {
			if !tok.IsSpecial(id) { // vLLM's default skip_special_tokens
				text.WriteString(ds.Next(id))
			}
		}
		ch := base
		c := vllmChoice{Text: text.String(), StopReason: json.RawMessage("null"), TokenIDs: ids}
		if i == 0 {
			c.PromptTokenIDs = promptIDs
		}
		if n == len(out) {
			c.FinishReason = &finish
			c.StopReason = stopReason
		}
		ch.Choices = []vllmChoice{c}
		writeData(&b, ch)
	}
	if !spec.NoUsage {
		ch := base
		ch.Choices = []vllmChoice{}
		u := &vllmUsage{PromptTokens: len(promptIDs), CompletionTokens: len(out), TotalTokens: len(promptIDs) + len(out)}
		if spec.CachedTokens > 0 {
			u.PromptTokensDetails = &struct {
				CachedTokens int `json:"cached_tokens"`
			}{spec.CachedTokens}
		}
		ch.Usage = u
		writeData(&b, ch)
	}
	if !spec.NoDone {
		b.WriteString("data: [DONE]\n\n")
	}
	return b.String()
}

// caseResult is what a golden case compares.
type caseResult struct {
	events   string
	response string
	ranges   string
}

// runCase plays input through ChunkReader → Converter → Encoder, as the
// server does.
func runCase(t *testing.T, tok *bpe.Tokenizer, spec *caseSpec, r io.Reader) caseResult {
	t.Helper()
	fp := mustQwen3Parser(t, tok, tok.NewDecodeStream(), func(o *stream.FamilyOptions) {
		o.ThinkingOpen, o.ParallelToolCalls = spec.ThinkingOpen, spec.parallel()
	})
	temp := 0.7
	conv := stream.NewConverter(stream.ConverterOptions{
		Output: fp,
		Emitter: stream.EmitterOptions{
			Response: stream.Response{
				Model:             "qwen3",
				ParallelToolCalls: spec.parallel(),
				Store:             true,
				Temperature:       &temp,
				Tools:             json.RawMessage(`[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}},"strict":false}]`),
			},
			NewID: counterIDs(),
			Now:   fixedNow,
		},
	})
	var out bytes.Buffer
	enc := stream.NewEncoder(&out)
	must := func(err error) {
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
	}
	must(enc.EncodeAll(conv.Start(nil)))
	cr := stream.NewChunkReader(r)
	for {
		ch, err := cr.Next()
		if err == io.EOF {
			must(enc.EncodeAll(conv.End(nil)))
			break
		}
		if err != nil {
			code := "server_error"
			if errors.Is(err, stream.ErrTruncated) {
				code = "upstream_truncated"
			}
			must(enc.EncodeAll(conv.Fail(nil, code, err.Error())))
			break
		}
		must(enc.EncodeAll(conv.Chunk(nil, ch)))
	}
	checkStream(t, out.Bytes())

	resp, err := json.Marshal(conv.Response())
	if err != nil {
		t.Fatal(err)
	}
	var ind bytes.Buffer
	if err := json.Indent(&ind, resp, "", "  "); err != nil {
		t.Fatalf("response JSON: %v\n%s", err, resp)
	}
	ind.WriteByte('\n')

	var rb strings.Builder
	ids := conv.TokenIDs()
	fmt.Fprintf(&rb, "generated %d ids\n", len(ids))
	for _, r := range conv.Ranges() {
		text := ""
		if r.Start >= 0 && r.End <= len(ids) && r.Start <= r.End {
			text = tok.Decode(ids[r.Start:r.End])
		}
		fmt.Fprintf(&rb, "%d %s %s [%d,%d) %q\n", r.OutputIndex, r.Type, r.ItemID, r.Start, r.End, text)
	}
	return caseResult{events: out.String(), response: ind.String(), ranges: rb.String()}
}

func TestGolden(t *testing.T) {
	tok := tokenizer(t)
	files, err := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			a := parseArchive(string(raw))
			var spec caseSpec
			if s, ok := a.get("spec.json"); ok {
				if err := json.Unmarshal([]byte(s), &spec); err != nil {
					t.Fatalf("spec.json: %v", err)
				}
			}
			if *update && spec.Output != "" {
				a.set("input.sse", genInput(tok, &spec))
			}
			input, ok := a.get("input.sse")
			if !ok {
				t.Fatal("missing input.sse section")
			}
			got := runCase(t, tok, &spec, strings.NewReader(input))
			// Any chunking of the upstream bytes gives the same result.
			if again := runCase(t, tok, &spec, iotest.OneByteReader(strings.NewReader(input))); again != got {
				t.Errorf("one-byte reads changed the result:\n%s", cmp.Diff(got.events, again.events))
			}
			want := map[string]string{"events.sse": got.events, "response.json": got.response, "ranges.txt": got.ranges}
			if *update {
				for _, name := range []string{"events.sse", "response.json", "ranges.txt"} {
					a.set(name, want[name])
				}
				if err := os.WriteFile(file, a.format(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			for _, name := range []string{"events.sse", "response.json", "ranges.txt"} {
				exp, _ := a.get(name)
				if diff := cmp.Diff(exp, want[name]); diff != "" {
					t.Errorf("%s mismatch (-want +got):\n%s", name, diff)
				}
			}
		})
	}
}

// FuzzConverter feeds arbitrary upstream bytes through the whole pipeline
// (byte-level ids): whatever arrives, the client stream must keep the
// Responses grammar checkStream enforces.
func FuzzConverter(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		a := parseArchive(string(raw))
		if in, ok := a.get("input.sse"); ok && len(in) < 4096 {
			f.Add([]byte(in), false)
		}
	}
	f.Add([]byte(fmt.Sprintf("data: {\"choices\":[{\"token_ids\":[%d,123,34,110,34,58,34,102,34,44,34,97,34,58,123]}]}\n\ndata: [DONE]\n\n", byteMarkers["<tool_call>"])), true)
	f.Fuzz(func(t *testing.T, in []byte, thinkingOpen bool) {
		conv := stream.NewConverter(stream.ConverterOptions{
			Output:  mustQwen3Parser(t, byteLookup{}, &byteDecoder{}, func(o *stream.FamilyOptions) { o.ThinkingOpen = thinkingOpen }),
			Emitter: stream.EmitterOptions{NewID: counterIDs(), Now: fixedNow},
		})
		var out bytes.Buffer
		enc := stream.NewEncoder(&out)
		_ = enc.EncodeAll(conv.Start(nil))
		cr := stream.NewChunkReader(bytes.NewReader(in))
		for {
			ch, err := cr.Next()
			if err == io.EOF {
				_ = enc.EncodeAll(conv.End(nil))
				break
			}
			if err != nil {
				_ = enc.EncodeAll(conv.Fail(nil, "server_error", err.Error()))
				break
			}
			_ = enc.EncodeAll(conv.Chunk(nil, ch))
		}
		checkStream(t, out.Bytes())
	})
}
