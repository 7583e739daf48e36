package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// agentItems is a synthetic agent conversation shaped like a coding agent's (Codex's item
// shapes and key order): rounds of a user message, a function_call and a function_call_output
// whose ~8 KB output mixes Go code, JSON and test output, so its JSON string has an escape
// every ~8 bytes. 35 rounds are ~330 KB.
func agentItems(tb testing.TB, rounds int) []json.RawMessage {
	tb.Helper()
	type part struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	type message struct {
		Type    string `json:"type"`
		Role    string `json:"role"`
		Content []part `json:"content"`
	}
	type call struct {
		Type      string `json:"type"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
		CallID    string `json:"call_id"`
	}
	type output struct {
		Type   string `json:"type"`
		CallID string `json:"call_id"`
		Output string `json:"output"`
	}
	var out []json.RawMessage
	add := func(v any) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // as Python and JavaScript clients send it
		if err := enc.Encode(v); err != nil {
			tb.Fatal(err)
		}
		out = append(out, json.RawMessage(bytes.TrimSpace(buf.Bytes())))
	}
	for r := range rounds {
		id := fmt.Sprintf("call_%03d_Xk2jQ9", r)
		add(message{"message", "user", []part{{"input_text",
			fmt.Sprintf("Step %d: look at internal/pkg%d/file.go and fix the failing test.", r, r)}}})
		add(call{"function_call", "exec_command", fmt.Sprintf(
			`{"cmd":["bash","-lc","sed -n '1,200p' internal/pkg%d/file.go && go test ./internal/pkg%d/"],"workdir":"/repo","timeout_ms":10000}`,
			r, r), id})
		add(output{"function_call_output", id, toolOutput(r)})
	}
	return out
}

// toolOutput is ~8 KB of what a shell tool returns: source code, a JSON document, test output.
func toolOutput(r int) string {
	var sb strings.Builder
	for i := 0; sb.Len() < 8000; i++ {
		switch i % 3 {
		case 0:
			fmt.Fprintf(&sb, "func handle%d_%d(w http.ResponseWriter, r *http.Request) {\n\tif err := json.NewDecoder(r.Body).Decode(&req); err != nil {\n\t\thttp.Error(w, \"bad request: \\\"\"+err.Error()+\"\\\"\", 400)\n\t\treturn\n\t}\n}\n", r, i)
		case 1:
			fmt.Fprintf(&sb, "{\"id\": %d, \"name\": \"item-%d\", \"tags\": [\"a\", \"b\"], \"path\": \"C:\\\\tmp\\\\x%d\", \"ok\": true}\n", i, i, r)
		default:
			fmt.Fprintf(&sb, "--- FAIL: TestHandle%d (0.00s)\n    handler_test.go:%d: got \"%d\", want \"%d\" — naïve ✓\n", i, 40+i, i, i+1)
		}
	}
	return sb.String()
}

func itemsSize(items []json.RawMessage) int64 {
	n := 0
	for _, it := range items {
		n += len(it)
	}
	return int64(n)
}

// BenchmarkFromResponses maps a ~330 KB agent conversation. cache=off is the cold parse of every
// item; cache=on is a later turn of the same conversation, all of whose items are cached.
func BenchmarkFromResponses(b *testing.B) {
	items := agentItems(b, 35)
	for _, cached := range []bool{false, true} {
		name := "cache=off"
		in := ResponsesInput{Items: items}
		if cached {
			name = "cache=on"
			in.Cache = NewItemCache(64 << 20)
			if _, err := FromResponses(in); err != nil { // the earlier turn that filled it
				b.Fatal(err)
			}
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(itemsSize(items))
			for b.Loop() {
				if _, err := FromResponses(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkItemCacheHit compares parsing an item with a cache hit on it, by item size: even
// small items are worth caching.
func BenchmarkItemCacheHit(b *testing.B) {
	for _, size := range []int{64, 128, 256, 512, 1024} {
		text := strings.Repeat("Please fix the \"failing\" test.\n", size/32+1)
		raw := fmt.Appendf(nil, `{"role":"user","content":%q}`, text[:size-30])
		b.Run(fmt.Sprintf("bytes=%d/op=parse", len(raw)), func(b *testing.B) {
			for b.Loop() {
				if _, err := parseItem(raw, "input[0]"); err != nil {
					b.Fatal(err)
				}
			}
		})
		c := NewItemCache(1 << 20)
		p, err := parseItem(raw, "input[0]")
		if err != nil {
			b.Fatal(err)
		}
		h, _, _ := c.get(raw)
		c.put("", h, raw, p)
		b.Run(fmt.Sprintf("bytes=%d/op=hit", len(raw)), func(b *testing.B) {
			for b.Loop() {
				if _, _, ok := c.get(raw); !ok {
					b.Fatal("miss")
				}
			}
		})
	}
}
