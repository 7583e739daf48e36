package e2e

import (
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// weatherOutput is the tool result fed back after a get_weather call; the scripted model
// quotes a tool result in its answer, so the word "sunny" must come back.
const weatherOutput = `{"forecast":"sunny","temp_c":21}`

// weatherSchema is the JSON schema of the get_weather tool (strict, as the Go SDK sends it).
func weatherSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"location": map[string]any{"type": "string", "description": "City name"},
		},
		"required":             []string{"location"},
		"additionalProperties": false,
	}
}

func weatherTool() responses.ToolUnionParam {
	return responses.ToolParamOfFunction("get_weather", weatherSchema(), true)
}

// scenario is one test of a suite, run against a stack (TestGoSDK runs them in parallel on the
// shared stack; TestTransportsSDKSuites in order over each upstream transport).
type scenario struct {
	name string
	run  func(t *testing.T, st *stack)
}

// TestGoSDK drives stitch with the official Go SDK (openai-go v3) and raw HTTP.
func TestGoSDK(t *testing.T) {
	st := requireStack(t)
	for _, tt := range goSDKScenarios() {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, st)
		})
	}
}

// goSDKScenarios are TestGoSDK's tests.
func goSDKScenarios() []scenario {
	return []scenario{
		{"create", testCreate},
		{"stream_sdk", testStreamSDK},
		{"stream_raw_accept_json", testStreamRaw},
		{"accept_sse_without_stream_is_json", testAcceptSSEWithoutStream},
		{"tool_round", testToolRound},
		{"tool_round_stream", testToolRoundStream},
		{"get_delete_404", testGetDelete},
		{"unknown_previous_response_id", testUnknownPrevious},
		{"store_false", testStoreFalse},
		{"input_items", testInputItems},
		{"reasoning", testReasoning},
		{"codex_full_history_replay", testCodexReplay},
		{"agents_style_replay", testAgentsStyleReplay},
	}
}

// decodeResponse decodes the raw JSON of an SDK response into the wire shape.
func decodeResponse(t *testing.T, raw string) wireResponse {
	t.Helper()
	var r wireResponse
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		t.Fatalf("decode response: %v: %s", err, raw)
	}
	return r
}

// checkCompleted verifies the shape of a completed non-stream response.
func checkCompleted(t *testing.T, r wireResponse) {
	t.Helper()
	if r.ID == "" || r.Object != "response" || r.Status != "completed" || r.Model != modelName {
		t.Errorf("response id/object/status/model = %q/%q/%q/%q, want non-empty/response/completed/%s", r.ID, r.Object, r.Status, r.Model, modelName)
	}
	if len(r.Output) == 0 {
		t.Fatalf("response %s has no output", r.ID)
	}
	seen := map[string]bool{}
	for i, it := range r.Output {
		if it.ID == "" || seen[it.ID] {
			t.Errorf("output[%d] (%s) id %q is empty or repeated", i, it.Type, it.ID)
		}
		seen[it.ID] = true
		if it.Type == "reasoning" && i > 0 && r.Output[i-1].Type != "reasoning" {
			t.Errorf("output[%d]: reasoning after a %s item", i, r.Output[i-1].Type)
		}
		if it.Type == "message" && it.Role != "assistant" {
			t.Errorf("output[%d]: message role %q, want assistant", i, it.Role)
		}
	}
	if u := r.Usage; u == nil || u.InputTokens <= 0 || u.OutputTokens <= 0 || u.TotalTokens != u.InputTokens+u.OutputTokens {
		t.Errorf("usage = %+v, want positive input/output tokens summing to total", u)
	}
}

// wantAPIError checks that err is an SDK *openai.Error with the given status and fields
// ("" skips a field).
func wantAPIError(t *testing.T, err error, status int, typ, code, param string) *openai.Error {
	t.Helper()
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("error = %v (%T), want *openai.Error with status %d", err, err, status)
	}
	if apiErr.StatusCode != status {
		t.Errorf("status = %d, want %d; body %s", apiErr.StatusCode, status, apiErr.RawJSON())
	}
	if typ != "" && apiErr.Type != typ {
		t.Errorf("error type = %q, want %q", apiErr.Type, typ)
	}
	if code != "" && apiErr.Code != code {
		t.Errorf("error code = %q, want %q", apiErr.Code, code)
	}
	if param != "" && apiErr.Param != param {
		t.Errorf("error param = %q, want %q", apiErr.Param, param)
	}
	return apiErr
}

func testCreate(t *testing.T, st *stack) {
	c := st.client()
	resp, err := c.Responses.New(testContext(t), responses.ResponseNewParams{
		Model:        modelName,
		Instructions: openai.String("You are terse."),
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello to the e2e suite.")},
	})
	if err != nil {
		t.Fatalf("Responses.New: %v", err)
	}
	r := decodeResponse(t, resp.RawJSON())
	checkCompleted(t, r)
	if resp.OutputText() == "" || resp.OutputText() != r.outputText() {
		t.Errorf("OutputText() = %q, want the non-empty message text %q", resp.OutputText(), r.outputText())
	}
	if resp.ID != r.ID || string(resp.Status) != "completed" {
		t.Errorf("SDK view id/status = %q/%q, want %q/completed", resp.ID, resp.Status, r.ID)
	}
}

func testStreamSDK(t *testing.T, st *stack) {
	c := st.client()
	stream := c.Responses.NewStreaming(testContext(t), responses.ResponseNewParams{
		Model: modelName,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Stream a short greeting.")},
	})
	defer stream.Close()
	var events []sseEvent
	var deltas strings.Builder
	for stream.Next() {
		ev := stream.Current()
		events = append(events, sseEvent{Data: []byte(ev.RawJSON())})
		if ev.Type == "response.output_text.delta" {
			deltas.WriteString(ev.Delta)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	res := checkStream(t, events)
	if res.Terminal != "response.completed" {
		t.Fatalf("terminal event %s, want response.completed", res.Terminal)
	}
	if got := res.Response.outputText(); got == "" || got != deltas.String() {
		t.Errorf("final text %q, want the non-empty concatenated deltas %q", got, deltas.String())
	}
	// A streamed response is stored like any other.
	got, err := c.Responses.Get(testContext(t), res.Response.ID, responses.ResponseGetParams{})
	if err != nil {
		t.Fatalf("Get(%s) after stream: %v", res.Response.ID, err)
	}
	if got.OutputText() != res.Response.outputText() {
		t.Errorf("Get(%s).OutputText() = %q, want %q", res.Response.ID, got.OutputText(), res.Response.outputText())
	}
}

// testStreamRaw sends a streaming request with Accept: application/json, as both SDKs do:
// the body's "stream": true alone decides streaming.
func testStreamRaw(t *testing.T, st *stack) {
	body := mustJSON(t, map[string]any{
		"model":  modelName,
		"input":  []any{map[string]any{"role": "user", "content": "Stream something."}},
		"stream": true,
	})
	res := checkStream(t, st.postStream(t, testContext(t), body, "application/json"))
	if res.Terminal != "response.completed" || res.Response.outputText() == "" {
		t.Errorf("terminal %s with text %q, want response.completed with text", res.Terminal, res.Response.outputText())
	}
}

func testAcceptSSEWithoutStream(t *testing.T, st *stack) {
	body := mustJSON(t, map[string]any{"model": modelName, "input": "No stream key, SSE accept."})
	status, hdr, b := st.doRaw(t, testContext(t), http.MethodPost, "/v1/responses", body,
		http.Header{"Accept": {"text/event-stream"}})
	if status != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", status, b)
	}
	if mt, _, _ := mime.ParseMediaType(hdr.Get("Content-Type")); mt != "application/json" {
		t.Fatalf("Content-Type %q, want application/json (streaming is decided by the body only)", hdr.Get("Content-Type"))
	}
	var r wireResponse
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("decode: %v: %s", err, b)
	}
	checkCompleted(t, r)
}

// checkWeatherCall finds the get_weather call of r and checks its arguments follow the schema.
func checkWeatherCall(t *testing.T, r wireResponse) wireItem {
	t.Helper()
	calls := r.items("function_call")
	if len(calls) == 0 {
		t.Fatalf("response %s has no function_call; output types %v", r.ID, outputTypes(r))
	}
	fc := calls[0]
	if fc.Name != "get_weather" || fc.CallID == "" || fc.Status != "completed" {
		t.Errorf("function_call name/call_id/status = %q/%q/%q, want get_weather/non-empty/completed", fc.Name, fc.CallID, fc.Status)
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal([]byte(strPtr(fc.Arguments)), &args); err != nil {
		t.Fatalf("function_call arguments %q: not a JSON object: %v", strPtr(fc.Arguments), err)
	}
	var loc string
	if err := json.Unmarshal(args["location"], &loc); err != nil {
		t.Errorf("arguments %s: required string \"location\" missing: %v", strPtr(fc.Arguments), err)
	}
	return fc
}

func outputTypes(r wireResponse) []string {
	var out []string
	for _, it := range r.Output {
		out = append(out, it.Type)
	}
	return out
}

func testToolRound(t *testing.T, st *stack) {
	c := st.client()
	ctx := testContext(t)
	tools := []responses.ToolUnionParam{weatherTool()}
	resp1, err := c.Responses.New(ctx, responses.ResponseNewParams{
		Model: modelName,
		Tools: tools,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("What is the weather in Paris? Use get_weather.")},
	})
	if err != nil {
		t.Fatalf("Responses.New (tool call): %v", err)
	}
	r1 := decodeResponse(t, resp1.RawJSON())
	checkCompleted(t, r1)
	fc := checkWeatherCall(t, r1)

	out := responses.ResponseInputItemParamOfFunctionCallOutput(weatherOutput)
	out.OfFunctionCallOutput.CallID = openai.String(fc.CallID)
	resp2, err := c.Responses.New(ctx, responses.ResponseNewParams{
		Model:              modelName,
		PreviousResponseID: openai.String(resp1.ID),
		Tools:              tools,
		Input:              responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{out}},
	})
	if err != nil {
		t.Fatalf("Responses.New (function_call_output): %v", err)
	}
	r2 := decodeResponse(t, resp2.RawJSON())
	checkCompleted(t, r2)
	if resp2.PreviousResponseID != resp1.ID {
		t.Errorf("previous_response_id = %q, want %q", resp2.PreviousResponseID, resp1.ID)
	}
	if !strings.Contains(resp2.OutputText(), "sunny") {
		t.Errorf("answer after the tool result = %q, want it to quote the result (\"sunny\")", resp2.OutputText())
	}
}

func testToolRoundStream(t *testing.T, st *stack) {
	ctx := testContext(t)
	tools := []any{map[string]any{"type": "function", "name": "get_weather", "description": "Weather of a city",
		"parameters": weatherSchema(), "strict": true}}
	body := mustJSON(t, map[string]any{"model": modelName, "stream": true, "tools": tools,
		"input": "Weather in Oslo, please: call get_weather."})
	res1 := checkStream(t, st.postStream(t, ctx, body, "application/json"))
	fc := checkWeatherCall(t, res1.Response)

	body = mustJSON(t, map[string]any{"model": modelName, "stream": true, "tools": tools,
		"previous_response_id": res1.Response.ID,
		"input":                []any{map[string]any{"type": "function_call_output", "call_id": fc.CallID, "output": weatherOutput}}})
	res2 := checkStream(t, st.postStream(t, ctx, body, "application/json"))
	if res2.Terminal != "response.completed" {
		t.Fatalf("terminal %s, want response.completed", res2.Terminal)
	}
	if p := strPtr(res2.Response.PreviousResponseID); p != res1.Response.ID {
		t.Errorf("previous_response_id = %q, want %q", p, res1.Response.ID)
	}
	if !strings.Contains(res2.Response.outputText(), "sunny") {
		t.Errorf("answer = %q, want it to quote the tool result", res2.Response.outputText())
	}
}

func testGetDelete(t *testing.T, st *stack) {
	c := st.client()
	ctx := testContext(t)
	newResp := func() *responses.Response {
		t.Helper()
		r, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: modelName,
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Remember me.")}})
		if err != nil {
			t.Fatalf("Responses.New: %v", err)
		}
		return r
	}
	resp := newResp()
	got, err := c.Responses.Get(ctx, resp.ID, responses.ResponseGetParams{})
	if err != nil {
		t.Fatalf("Get(%s): %v", resp.ID, err)
	}
	if got.ID != resp.ID || got.OutputText() != resp.OutputText() || string(got.Status) != "completed" {
		t.Errorf("Get = %s/%q/%s, want %s/%q/completed", got.ID, got.OutputText(), got.Status, resp.ID, resp.OutputText())
	}

	// Raw DELETE to see the body the SDK discards.
	status, _, b := st.doRaw(t, ctx, http.MethodDelete, "/v1/responses/"+resp.ID, nil, nil)
	var del struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Deleted bool   `json:"deleted"`
	}
	if err := json.Unmarshal(b, &del); status != http.StatusOK || err != nil ||
		del.ID != resp.ID || del.Object != "response.deleted" || !del.Deleted {
		t.Errorf("DELETE = %d %s, want 200 {id:%s, object:response.deleted, deleted:true}", status, b, resp.ID)
	}
	_, err = c.Responses.Get(ctx, resp.ID, responses.ResponseGetParams{})
	wantAPIError(t, err, http.StatusNotFound, "invalid_request_error", "", "")
	wantAPIError(t, c.Responses.Delete(ctx, resp.ID), http.StatusNotFound, "invalid_request_error", "", "")
	_, err = c.Responses.New(ctx, responses.ResponseNewParams{Model: modelName, PreviousResponseID: openai.String(resp.ID),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Still there?")}})
	wantAPIError(t, err, http.StatusBadRequest, "invalid_request_error", "previous_response_not_found", "previous_response_id")

	// SDK DELETE of a live response.
	resp = newResp()
	if err := c.Responses.Delete(ctx, resp.ID); err != nil {
		t.Fatalf("Delete(%s): %v", resp.ID, err)
	}
	_, err = c.Responses.Get(ctx, resp.ID, responses.ResponseGetParams{})
	wantAPIError(t, err, http.StatusNotFound, "invalid_request_error", "", "")

	// Never existed.
	_, err = c.Responses.Get(ctx, "resp_e2e_never_existed", responses.ResponseGetParams{})
	wantAPIError(t, err, http.StatusNotFound, "invalid_request_error", "", "")
	status, _, b = st.doRaw(t, ctx, http.MethodGet, "/v1/responses/resp_e2e_never_existed", nil, nil)
	if typ, _, _, _ := decodeAPIError(t, b); status != http.StatusNotFound || typ != "invalid_request_error" {
		t.Errorf("raw GET unknown = %d %s, want 404 invalid_request_error", status, b)
	}
}

func testUnknownPrevious(t *testing.T, st *stack) {
	c := st.client()
	ctx := testContext(t)
	const unknown = "resp_e2e_unknown_previous"
	params := responses.ResponseNewParams{Model: modelName, PreviousResponseID: openai.String(unknown),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Continue.")}}
	_, err := c.Responses.New(ctx, params)
	apiErr := wantAPIError(t, err, http.StatusBadRequest, "invalid_request_error", "previous_response_not_found", "previous_response_id")
	if !strings.Contains(apiErr.Message, unknown) {
		t.Errorf("message %q does not name the id %q", apiErr.Message, unknown)
	}

	// Streaming: the error comes before the first SSE byte, so it is a plain 400.
	stream := c.Responses.NewStreaming(ctx, params)
	for stream.Next() {
		t.Errorf("unexpected stream event %s", stream.Current().Type)
	}
	wantAPIError(t, stream.Err(), http.StatusBadRequest, "invalid_request_error", "previous_response_not_found", "previous_response_id")
	stream.Close()

	body := mustJSON(t, map[string]any{"model": modelName, "stream": true, "previous_response_id": unknown, "input": "Continue."})
	status, _, b := st.doRaw(t, ctx, http.MethodPost, "/v1/responses", body, http.Header{"Accept": {"text/event-stream"}})
	typ, code, param, _ := decodeAPIError(t, b)
	if status != http.StatusBadRequest || typ != "invalid_request_error" || code != "previous_response_not_found" || param != "previous_response_id" {
		t.Errorf("raw stream with unknown previous = %d %s, want 400 previous_response_not_found", status, b)
	}
}

func testStoreFalse(t *testing.T, st *stack) {
	c := st.client()
	ctx := testContext(t)
	resp, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: modelName, Store: openai.Bool(false),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Do not keep this.")}})
	if err != nil {
		t.Fatalf("Responses.New(store:false): %v", err)
	}
	checkCompleted(t, decodeResponse(t, resp.RawJSON()))
	_, err = c.Responses.Get(ctx, resp.ID, responses.ResponseGetParams{})
	wantAPIError(t, err, http.StatusNotFound, "invalid_request_error", "", "")
	_, err = c.Responses.InputItems.List(ctx, resp.ID, responses.InputItemListParams{})
	wantAPIError(t, err, http.StatusNotFound, "invalid_request_error", "", "")
	_, err = c.Responses.New(ctx, responses.ResponseNewParams{Model: modelName, PreviousResponseID: openai.String(resp.ID),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Continue.")}})
	wantAPIError(t, err, http.StatusBadRequest, "invalid_request_error", "previous_response_not_found", "previous_response_id")
}
