package server_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func (st *equivalenceStack) render(t *testing.T, body string) gjson.Result {
	t.Helper()
	resp, err := http.Post(st.url+"/v1/responses/render", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("POST /v1/responses/render = %d %s", resp.StatusCode, data)
	}
	return gjson.ParseBytes(data)
}

// TestRenderRouteEqualsUpstream: POST /v1/responses/render answers, for every turn of a tool
// round and a follow-up, the very ids and cache_salt POST /v1/responses then sends upstream for
// the same body, with and without artifacts; rendering twice (before and after the create) gives
// the same ids, so render advanced nothing.
func TestRenderRouteEqualsUpstream(t *testing.T) {
	for _, artifacts := range []bool{false, true} {
		t.Run(fmt.Sprintf("artifacts=%v", artifacts), func(t *testing.T) {
			st := newEquivalenceStack(t, artifacts)
			tools := `[{"type":"function","name":"get_weather","description":"Weather by city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]`
			bodies := []func(prev gjson.Result) string{
				func(gjson.Result) string {
					return `{"model":"qwen3","instructions":"Be terse.","input":"Weather in Paris?","tools":` + tools + `}`
				},
				func(prev gjson.Result) string {
					call := prev.Get(`output.#(type=="function_call")`)
					if !call.Exists() {
						t.Fatalf("no function call in %s", prev.Raw)
					}
					return `{"model":"qwen3","instructions":"Be terse.","previous_response_id":"` + prev.Get("id").Str +
						`","input":[{"type":"function_call_output","call_id":"` + call.Get("call_id").Str + `","output":"{\"temp\": 21}"}],"tools":` + tools + `}`
				},
				func(prev gjson.Result) string {
					return `{"model":"qwen3","previous_response_id":"` + prev.Get("id").Str + `","input":"Thanks!","tools":` + tools + `,"tool_choice":"required"}`
				},
			}
			var prev gjson.Result
			for i, mk := range bodies {
				body := mk(prev)
				before := st.render(t, body)
				prev = st.create(t, body)
				after := st.render(t, body)
				line := gjson.Parse(st.record.lines()[i])
				sent := line.Get("prompt_token_ids").Raw
				if got := before.Get("token_ids").Raw; got != sent {
					t.Errorf("turn %d: render ids differ from the upstream prompt\nrender:   %.200s\nupstream: %.200s", i+1, got, sent)
				}
				if after.Get("token_ids").Raw != before.Get("token_ids").Raw {
					t.Errorf("turn %d: a second render differs from the first", i+1)
				}
				if salt := before.Get("cache_salt").Str; salt == "" || salt != line.Get("cache_salt").Str {
					t.Errorf("turn %d: render cache_salt %q, upstream %q", i+1, salt, line.Get("cache_salt").Str)
				}
				if before.Get("model").Str != "qwen3" || before.Get("sampling_params.max_tokens").Int() <= 0 {
					t.Errorf("turn %d: render answer %s", i+1, before.Raw)
				}
			}
		})
	}
}

// TestRenderRouteTenantScoped: a response resolves for its own tenant only; another tenant's id
// and an unknown id are 404 with the param named, as vLLM answers an unknown response.
func TestRenderRouteTenantScoped(t *testing.T) {
	c := newConvStack(t)
	code, r1 := c.do(t, "key-a", http.MethodPost, "/v1/responses", `{"model":"qwen3","input":"hello"}`)
	if code != 200 {
		t.Fatalf("create = %d %s", code, r1.Raw)
	}
	cont := `{"model":"qwen3","previous_response_id":"` + r1.Get("id").Str + `","input":"again"}`
	if code, got := c.do(t, "key-a", http.MethodPost, "/v1/responses/render", cont); code != 200 || len(got.Get("token_ids").Array()) == 0 {
		t.Fatalf("own tenant: %d %s", code, got.Raw)
	}
	for _, tc := range []struct{ key, body string }{
		{"key-b", cont},
		{"key-a", `{"model":"qwen3","previous_response_id":"resp_nope","input":"again"}`},
	} {
		code, got := c.do(t, tc.key, http.MethodPost, "/v1/responses/render", tc.body)
		if code != http.StatusNotFound || got.Get("error.param").Str != "previous_response_id" || got.Get("token_ids").Exists() {
			t.Errorf("%s: %d %s, want 404 on previous_response_id", tc.key, code, got.Raw)
		}
	}
	if code, got := c.do(t, "key-a", http.MethodPost, "/v1/responses/render", `{"model":"qwen3","input":[{"type":"bogus"}]}`); code != 400 || got.Get("error.param").Str == "" {
		t.Errorf("bad input: %d %s", code, got.Raw)
	}
}
