package sim_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stitchllm/stitch/render/bpe"

	"github.com/stitchllm/stitch/sim"
	"github.com/stitchllm/stitch/sim/simtest"
)

// qwenDir is the Qwen3 model directory (tokenizer.json, tokenizer_config.json).
const qwenDir = "../testdata/models/qwen3"

// realTokenizer loads Qwen3's tokenizer once for the whole package (about a second).
var realTokenizer = sync.OnceValues(func() (*bpe.Tokenizer, error) {
	data, err := os.ReadFile(filepath.Join(qwenDir, "tokenizer.json"))
	if err != nil {
		return nil, err
	}
	return bpe.Load(data)
})

// testTokenizer is the tokenizer the tests run with: Qwen3's real one.
func testTokenizer(t testing.TB) sim.Tokenizer {
	t.Helper()
	tok, err := realTokenizer()
	if err != nil {
		t.Fatalf("load Qwen3 tokenizer: %v", err)
	}
	return tok
}

// The real tokenizer and the stand-in satisfy what the simulator needs.
var (
	_ sim.Tokenizer = (*bpe.Tokenizer)(nil)
	_ sim.Tokenizer = simtest.ByteTokenizer{}
)

// byteTokenizer is the stand-in tokenizer (one id per byte), for the fallback decoder.
var byteTokenizer sim.Tokenizer = simtest.ByteTokenizer{}

// newTestServer starts a simulator with opts (Fast on, the test tokenizer) behind httptest.
func newTestServer(t testing.TB, opts sim.Options) (*sim.Server, *httptest.Server) {
	t.Helper()
	if opts.Tokenizer == nil {
		opts.Tokenizer = testTokenizer(t)
	}
	opts.Fast = true
	s, err := sim.New(opts)
	if err != nil {
		t.Fatalf("sim.New: %v", err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts
}

// completion is the part of a non-stream /v1/completions response the tests read.
type completion struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Index          int      `json:"index"`
		Text           string   `json:"text"`
		FinishReason   string   `json:"finish_reason"`
		StopReason     any      `json:"stop_reason"`
		TokenIDs       []uint32 `json:"token_ids"`
		PromptTokenIDs []uint32 `json:"prompt_token_ids"`
	} `json:"choices"`
	Usage *usage `json:"usage"`
}

type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func (u *usage) cached() int {
	if u == nil || u.PromptTokensDetails == nil {
		return 0
	}
	return u.PromptTokensDetails.CachedTokens
}

// post sends body (marshalled unless it is a string) and returns status and response body.
func post(t testing.TB, url string, body any) (int, []byte) {
	t.Helper()
	var raw []byte
	switch b := body.(type) {
	case string:
		raw = []byte(b)
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	return resp.StatusCode, out
}

// complete posts a non-stream completion and decodes it, failing on a non-200 answer.
func complete(t testing.TB, base string, body map[string]any) completion {
	t.Helper()
	status, out := post(t, base+"/v1/completions", body)
	if status != http.StatusOK {
		t.Fatalf("completions: status %d: %s", status, out)
	}
	var c completion
	if err := json.Unmarshal(out, &c); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	return c
}

// readSSE returns the data payloads of an event stream, "[DONE]" included.
func readSSE(t testing.TB, r io.Reader) []string {
	t.Helper()
	var events []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		line := sc.Text()
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			events = append(events, data)
		}
	}
	return events
}

// streamCompletion posts a stream request and returns its events.
func streamCompletion(t testing.TB, base string, body map[string]any) []string {
	t.Helper()
	body["stream"] = true
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, base+"/v1/completions", bytes.NewReader(raw))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream: status %d: %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("stream content type %q", ct)
	}
	return readSSE(t, resp.Body)
}

// qwenChat renders a Qwen3-style prompt: optional tools in the system block, then turns, then the
// generation prompt (with an empty think block when thinking is off).
func qwenChat(tools []string, thinking bool, turns ...[2]string) string {
	var b strings.Builder
	if len(tools) > 0 {
		b.WriteString("<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>")
		for _, t := range tools {
			b.WriteString("\n" + t)
		}
		b.WriteString("\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n")
	}
	for _, t := range turns {
		if t[0] == "tool" {
			b.WriteString("<|im_start|>user\n<tool_response>\n" + t[1] + "\n</tool_response><|im_end|>\n")
			continue
		}
		b.WriteString("<|im_start|>" + t[0] + "\n" + t[1] + "<|im_end|>\n")
	}
	b.WriteString("<|im_start|>assistant\n")
	if !thinking {
		b.WriteString("<think>\n\n</think>\n\n")
	}
	return b.String()
}

// ids returns the test tokenizer's ids of text as a JSON-friendly []uint32.
func ids(t testing.TB, text string) []uint32 {
	return testTokenizer(t).Encode(text)
}
