package server_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestMalformedCallEndsIncomplete: a tool call the model breaks after it began (the simulator's
// "malformed call" cue: hermes JSON with a syntax error, then </tool_call>) ends the response
// incomplete (incomplete_details.reason malformed_tool_call) with the function_call item
// incomplete, streamed and not: never completed with the closing marker as message text. The
// broken response is stored (it can be retrieved) but advances no artifact.
func TestMalformedCallEndsIncomplete(t *testing.T) {
	const tools = `[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]`
	for _, mode := range []string{"canonical", "exact"} {
		t.Run(mode, func(t *testing.T) {
			st := newSimStack(t, stackOptions{mode: mode})
			for _, stream := range []bool{false, true} {
				body := fmt.Sprintf(`{"model":"qwen3","input":"Weather in Paris? Use get_weather. This is a malformed call.","tools":%s,"stream":%v}`, tools, stream)
				status, resp, err := st.create(t.Context(), []byte(body))
				if err != nil || status != http.StatusOK {
					t.Fatalf("stream=%v: status %d err %v: %.300s", stream, status, err, resp)
				}
				final := resp
				if stream {
					i := bytes.LastIndex(resp, []byte("event: "))
					if !bytes.HasPrefix(resp[i:], []byte("event: response.incomplete\n")) {
						t.Fatalf("stream: last event %.80q, want response.incomplete", resp[i:])
					}
					d := bytes.Index(resp[i:], []byte("data: "))
					final = []byte(gjson.GetBytes(bytes.TrimSpace(resp[i+d+6:]), "response").Raw)
					if bytes.Contains(resp, []byte("</tool_call>")) {
						t.Errorf("stream: the closing marker reached the client: %s", resp)
					}
				}
				r := gjson.ParseBytes(final)
				if r.Get("status").Str != "incomplete" || r.Get("incomplete_details.reason").Str != "malformed_tool_call" {
					t.Errorf("stream=%v: status %q, incomplete_details %s", stream, r.Get("status").Str, r.Get("incomplete_details").Raw)
				}
				var calls int
				for _, it := range r.Get("output").Array() {
					switch it.Get("type").Str {
					case "function_call":
						calls++
						if it.Get("status").Str != "incomplete" || it.Get("name").Str != "get_weather" {
							t.Errorf("stream=%v: function_call %s", stream, it.Raw)
						}
					case "message":
						if strings.Contains(it.Raw, "tool_call") || strings.Contains(it.Raw, "get_weather") {
							t.Errorf("stream=%v: broken call as message text: %s", stream, it.Raw)
						}
					}
				}
				if calls != 1 {
					t.Errorf("stream=%v: %d function_call items: %s", stream, calls, final)
				}
				code, got := get(t, st.url+"/v1/responses/"+r.Get("id").Str)
				if code != http.StatusOK || gjson.GetBytes(got, "status").Str != "incomplete" {
					t.Errorf("stream=%v: retrieve: %d %.200s", stream, code, got)
				}
			}
			if s := st.artifacts.Stats().L1; s.Sets != 0 {
				t.Errorf("L1: %d artifact sets after malformed responses, want 0", s.Sets)
			}
			if n := gatherCounter(t, st.reg, "stitch_artifact_writes_total"); n != 0 {
				t.Errorf("artifact writes = %v, want 0", n)
			}
		})
	}
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.Bytes()
}
