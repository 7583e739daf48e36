package harmony

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkRenderResponses renders the golden suite's 12-round agent conversation (the largest
// case) from its request body: mapping, tool schemas and tokenization.
func BenchmarkRenderResponses(b *testing.B) {
	enc := testEncoder(b)
	var cases []goldenCase
	readJSON(b, "cases.json", &cases)
	var body []byte
	for _, c := range cases {
		if c.Name == "loop/long-agent" {
			body = []byte(c.Request)
		}
	}
	if body == nil {
		b.Fatal("case loop/long-agent not found")
	}
	b.ReportAllocs()
	for b.Loop() {
		req, err := RequestFromBody(body)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := enc.RenderResponses(req, Options{StartDate: "2025-06-28"}); err != nil {
			b.Fatal(err)
		}
	}
}

// agentItems100k is a gpt-oss agent conversation of about 100k tokens: 30 rounds of reasoning, a
// call and a ~3,300-token output.
func agentItems100k() []json.RawMessage {
	var items []json.RawMessage
	items = append(items, json.RawMessage(`{"role":"user","content":"q"}`))
	out := strings.Repeat("func main() { fmt.Println(\"hello world\") }\n", 300)
	for r := 0; r < 30; r++ {
		items = append(items,
			json.RawMessage(fmt.Sprintf(`{"type":"reasoning","content":[{"type":"reasoning_text","text":"think %d about it"}]}`, r)),
			json.RawMessage(fmt.Sprintf(`{"type":"function_call","name":"f","arguments":"{\"n\":%d}","call_id":"c%d"}`, r, r)))
		b, _ := json.Marshal(map[string]string{"type": "function_call_output", "call_id": fmt.Sprintf("c%d", r), "output": out})
		items = append(items, b)
	}
	return items
}

// BenchmarkFromResponsesCached maps a 100k-token conversation whose items are all in the item
// cache, as a continuation finds its history: what is left is finding the entries.
func BenchmarkFromResponsesCached(b *testing.B) {
	items := agentItems100k()
	c := NewItemCache(64 << 20)
	req := Request{Items: items, Cache: c, Tools: json.RawMessage(`[{"type":"function","name":"f","parameters":{"type":"object"}}]`)}
	if _, err := FromResponses(req, Options{StartDate: "2025-01-01"}); err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, it := range items {
		n += len(it)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FromResponses(req, Options{StartDate: "2025-01-01"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMessageDigestsFrom plans the same conversation and takes its digests from the
// previous call's state, as a continuation that only appends does.
func BenchmarkMessageDigestsFrom(b *testing.B) {
	enc := testEncoder(b)
	items := agentItems100k()
	c := NewItemCache(64 << 20)
	req := Request{Items: items, Cache: c}
	conv, _ := FromResponses(req, Options{StartDate: "2025-01-01"})
	p := enc.Plan(conv.Messages, RenderOptions{})
	_, _, st, _ := p.MessageDigestsFrom(nil)
	b.ReportAllocs()
	for b.Loop() {
		p := enc.Plan(conv.Messages, RenderOptions{})
		p.MessageDigestsFrom(st)
	}
}
