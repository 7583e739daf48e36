package e2e

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// wireList is a page of GET /v1/responses/{id}/input_items.
type wireList struct {
	Object  string          `json:"object"`
	Data    []wireInputItem `json:"data"`
	FirstID *string         `json:"first_id"`
	LastID  *string         `json:"last_id"`
	HasMore bool            `json:"has_more"`
}

type wireInputItem struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// text returns the text of a message item whose content is a string or a list of parts.
func (it wireInputItem) text() string {
	var s string
	if json.Unmarshal(it.Content, &s) == nil {
		return s
	}
	var parts []wirePart
	_ = json.Unmarshal(it.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func testInputItems(t *testing.T, st *stack) {
	c := st.client()
	ctx := testContext(t)
	input := responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage("alpha", responses.EasyInputMessageRoleUser),
		responses.ResponseInputItemParamOfMessage("bravo", responses.EasyInputMessageRoleAssistant),
		responses.ResponseInputItemParamOfMessage("charlie", responses.EasyInputMessageRoleUser),
	}
	resp, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: modelName,
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}})
	if err != nil {
		t.Fatalf("Responses.New: %v", err)
	}
	list := func(p responses.InputItemListParams) wireList {
		t.Helper()
		page, err := c.Responses.InputItems.List(ctx, resp.ID, p)
		if err != nil {
			t.Fatalf("InputItems.List(%+v): %v", p, err)
		}
		var l wireList
		if err := json.Unmarshal([]byte(page.RawJSON()), &l); err != nil {
			t.Fatalf("decode input_items page: %v: %s", err, page.RawJSON())
		}
		if l.Object != "list" {
			t.Errorf("input_items object = %q, want list", l.Object)
		}
		if len(page.Data) != len(l.Data) {
			t.Errorf("SDK page has %d items, raw JSON %d", len(page.Data), len(l.Data))
		}
		return l
	}
	texts := func(l wireList) []string {
		var out []string
		for _, it := range l.Data {
			out = append(out, it.text())
		}
		return out
	}

	asc := list(responses.InputItemListParams{Order: responses.InputItemListParamsOrderAsc})
	if got, want := texts(asc), []string{"alpha", "bravo", "charlie"}; !slices.Equal(got, want) || asc.HasMore {
		t.Fatalf("order=asc: texts %q has_more %v, want %q false", got, asc.HasMore, want)
	}
	for i, role := range []string{"user", "assistant", "user"} {
		it := asc.Data[i]
		if it.ID == "" || it.Type != "message" || it.Role != role {
			t.Errorf("item %d = id %q type %q role %q, want an id, message, %s", i, it.ID, it.Type, it.Role, role)
		}
	}
	ids := []string{asc.Data[0].ID, asc.Data[1].ID, asc.Data[2].ID}
	if strPtr(asc.FirstID) != ids[0] || strPtr(asc.LastID) != ids[2] {
		t.Errorf("first_id/last_id = %s/%s, want %s/%s", strPtr(asc.FirstID), strPtr(asc.LastID), ids[0], ids[2])
	}

	tests := []struct {
		name        string
		params      responses.InputItemListParams
		want        []string
		wantHasMore bool
	}{
		{"desc", responses.InputItemListParams{Order: responses.InputItemListParamsOrderDesc}, []string{"charlie", "bravo", "alpha"}, false},
		{"default order is desc", responses.InputItemListParams{}, []string{"charlie", "bravo", "alpha"}, false},
		{"limit 1 asc", responses.InputItemListParams{Order: responses.InputItemListParamsOrderAsc, Limit: openai.Int(1)}, []string{"alpha"}, true},
		{"after first asc", responses.InputItemListParams{Order: responses.InputItemListParamsOrderAsc, After: openai.String(ids[0]), Limit: openai.Int(2)}, []string{"bravo", "charlie"}, false},
		{"after first asc limit 1", responses.InputItemListParams{Order: responses.InputItemListParamsOrderAsc, After: openai.String(ids[0]), Limit: openai.Int(1)}, []string{"bravo"}, true},
		{"after last desc", responses.InputItemListParams{Order: responses.InputItemListParamsOrderDesc, After: openai.String(ids[2])}, []string{"bravo", "alpha"}, false},
	}
	for _, tt := range tests {
		l := list(tt.params)
		if got := texts(l); !slices.Equal(got, tt.want) || l.HasMore != tt.wantHasMore {
			t.Errorf("%s: texts %q has_more %v, want %q %v", tt.name, got, l.HasMore, tt.want, tt.wantHasMore)
		}
	}
	_, err = c.Responses.InputItems.List(ctx, "resp_e2e_never_existed", responses.InputItemListParams{})
	wantAPIError(t, err, http.StatusNotFound, "invalid_request_error", "", "")
}

// testReasoning checks reasoning items when the model thinks (Qwen3 thinks by default; the
// scripted simulator may or may not emit reasoning, so absence is only logged), replays them
// as input, and turns thinking off with reasoning effort "none".
func testReasoning(t *testing.T, st *stack) {
	c := st.client()
	ctx := testContext(t)
	const question = "Think first, then answer: what is two plus two?"
	resp, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: modelName,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(question)}})
	if err != nil {
		t.Fatalf("Responses.New: %v", err)
	}
	r := decodeResponse(t, resp.RawJSON())
	checkCompleted(t, r)
	reasoning := r.items("reasoning")
	if len(reasoning) == 0 {
		t.Logf("no reasoning item (allowed); output types %v", outputTypes(r))
	}
	for _, it := range reasoning {
		if it.Summary == nil {
			t.Errorf("reasoning %s: summary must be an array, even empty", it.ID)
		}
		for i, p := range it.Content {
			if p.Type != "reasoning_text" || p.Text == "" {
				t.Errorf("reasoning %s content[%d] = %+v, want non-empty reasoning_text", it.ID, i, p)
			}
		}
	}

	// Replay the output items verbatim (as an SDK does with response.output) plus a new turn.
	input := []json.RawMessage{mustJSON(t, map[string]any{"role": "user", "content": question})}
	for _, it := range resp.Output {
		input = append(input, json.RawMessage(it.RawJSON()))
	}
	input = append(input, mustJSON(t, map[string]any{"role": "user", "content": "And three plus three?"}))
	resp2, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: modelName},
		option.WithJSONSet("input", input))
	if err != nil {
		t.Fatalf("Responses.New (replayed reasoning): %v", err)
	}
	checkCompleted(t, decodeResponse(t, resp2.RawJSON()))

	resp3, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: modelName,
		Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortNone},
		Input:     responses.ResponseNewParamsInputUnion{OfString: openai.String("Answer without thinking: hi.")}})
	if err != nil {
		t.Fatalf("Responses.New (effort none): %v", err)
	}
	r3 := decodeResponse(t, resp3.RawJSON())
	checkCompleted(t, r3)
	if r3.outputText() == "" {
		t.Errorf("effort none: empty answer; output types %v", outputTypes(r3))
	}
}

// codexTools is a Codex-like tool list: a function, a namespace of nested functions and a
// hosted web_search tool.
func codexTools() []any {
	shellParams := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"command": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"workdir": map[string]any{"type": "string"},
		},
		"required":             []string{"command"},
		"additionalProperties": false,
	}
	readParams := map[string]any{
		"type":       "object",
		"properties": map[string]any{"path": map[string]any{"type": "string"}},
		"required":   []string{"path"},
	}
	return []any{
		map[string]any{"type": "function", "name": "shell", "description": "Runs a shell command.",
			"strict": false, "parameters": shellParams},
		map[string]any{"type": "namespace", "name": "mcp__files", "description": "File tools.",
			"tools": []any{map[string]any{"type": "function", "name": "read_file", "description": "Reads a file.",
				"strict": false, "parameters": readParams}}},
		map[string]any{"type": "web_search"},
	}
}

// codexRequest is the body Codex CLI sends: store false, stream, full history, no
// instructions (a developer message instead), encrypted reasoning included, unknown keys.
func codexRequest(t *testing.T, input []any) []byte {
	return mustJSON(t, map[string]any{
		"model":               modelName,
		"store":               false,
		"stream":              true,
		"include":             []string{"reasoning.encrypted_content"},
		"prompt_cache_key":    "e2e-codex-session",
		"client_metadata":     map[string]any{"originator": "e2e"},
		"parallel_tool_calls": false,
		"tool_choice":         "auto",
		"reasoning":           map[string]any{"effort": "medium", "summary": "auto"},
		"tools":               codexTools(),
		"input":               input,
	})
}

// codexReplayItem turns an output item into what Codex replays: reasoning with content null
// (and encrypted_content when the server gave one), other items as received.
func codexReplayItem(t *testing.T, raw json.RawMessage) any {
	t.Helper()
	var it wireItem
	if err := json.Unmarshal(raw, &it); err != nil {
		t.Fatalf("decode item: %v: %s", err, raw)
	}
	if it.Type != "reasoning" {
		return raw
	}
	item := map[string]any{"type": "reasoning", "id": it.ID, "summary": []any{}, "content": nil}
	if it.EncryptedContent != nil {
		item["encrypted_content"] = *it.EncryptedContent
	}
	return item
}

func testCodexReplay(t *testing.T, st *stack) {
	ctx := testContext(t)
	history := []any{
		map[string]any{"type": "message", "role": "developer", "content": []any{
			map[string]any{"type": "input_text", "text": "You are a coding agent running in a terminal."}}},
		map[string]any{"type": "message", "role": "user", "content": []any{
			map[string]any{"type": "input_text", "text": "List the repository with the shell tool."}}},
	}
	res1 := checkStream(t, st.postStream(t, ctx, codexRequest(t, history), "text/event-stream"))
	if res1.Terminal != "response.completed" {
		t.Fatalf("turn 1 terminal %s, want response.completed", res1.Terminal)
	}
	calls := res1.Response.items("function_call")
	if len(calls) == 0 || calls[0].Name != "shell" {
		t.Fatalf("turn 1: want a shell function_call, output types %v", outputTypes(res1.Response))
	}
	// Replay each item as the stream's output_item.done delivered it (Codex builds items
	// only from those events).
	for _, raw := range doneItems(t, res1) {
		history = append(history, codexReplayItem(t, raw))
	}
	history = append(history, map[string]any{"type": "function_call_output", "call_id": calls[0].CallID,
		"output": "README.md\nmain.go\ngo.mod"})
	res2 := checkStream(t, st.postStream(t, ctx, codexRequest(t, history), "text/event-stream"))
	if res2.Terminal != "response.completed" || !strings.Contains(res2.Response.outputText(), "main.go") {
		t.Errorf("turn 2: terminal %s text %q, want completed, quoting the tool output", res2.Terminal, res2.Response.outputText())
	}
	for _, id := range []string{res1.Response.ID, res2.Response.ID} {
		status, _, b := st.doRaw(t, ctx, http.MethodGet, "/v1/responses/"+id, nil, nil)
		if status != http.StatusNotFound {
			t.Errorf("GET store:false response %s = %d %s, want 404", id, status, b)
		}
	}

	// A history made elsewhere: client-made ids and a reasoning blob stitch did not seal.
	// Losing or distrusting inline state costs a full render, never the request.
	foreign := []any{
		history[0],
		map[string]any{"type": "message", "role": "user", "content": []any{
			map[string]any{"type": "input_text", "text": "What is in main.go?"}}},
		map[string]any{"type": "reasoning", "id": "rs_client_0001", "summary": []any{}, "content": nil,
			"encrypted_content": "gAAAAABforeign-opaque-blob-not-from-stitch=="},
		map[string]any{"type": "function_call", "id": "fc_client_0001", "call_id": "call_client_0001",
			"name": "shell", "arguments": `{"command":["cat","main.go"]}`, "status": "completed"},
		map[string]any{"type": "function_call_output", "id": "fco_client_0001", "call_id": "call_client_0001",
			"output": "package main"},
		map[string]any{"type": "message", "id": "msg_client_0001", "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": "It declares package main.", "annotations": []any{}}}},
		map[string]any{"type": "message", "role": "user", "content": []any{
			map[string]any{"type": "input_text", "text": "Thanks. Summarize in one line."}}},
	}
	res3 := checkStream(t, st.postStream(t, ctx, codexRequest(t, foreign), "text/event-stream"))
	if res3.Terminal != "response.completed" {
		t.Errorf("foreign history: terminal %s, want response.completed", res3.Terminal)
	}
}

// doneItems returns the raw item of each response.output_item.done, by output_index.
func doneItems(t *testing.T, res streamResult) []json.RawMessage {
	t.Helper()
	out := make([]json.RawMessage, len(res.Response.Output))
	for i, ev := range res.Events {
		if ev.Type != "response.output_item.done" || ev.OutputIndex == nil || *ev.OutputIndex >= len(out) {
			continue
		}
		var d struct {
			Item json.RawMessage `json:"item"`
		}
		if err := json.Unmarshal(res.Raw[i], &d); err != nil {
			t.Fatalf("decode output_item.done: %v", err)
		}
		out[*ev.OutputIndex] = d.Item
	}
	for i, raw := range out {
		if raw == nil {
			t.Fatalf("output[%d] has no response.output_item.done", i)
		}
	}
	return out
}

// testAgentsStyleReplay sends what the Agents SDK sends without previousResponseId: the
// whole history with item ids and statuses, tools re-sent with "$schema" in the parameters,
// no store key.
func testAgentsStyleReplay(t *testing.T, st *stack) {
	ctx := testContext(t)
	params := weatherSchema()
	params["$schema"] = "http://json-schema.org/draft-07/schema#"
	tools := []any{map[string]any{"type": "function", "name": "get_weather", "description": "Weather of a city",
		"parameters": params, "strict": true}}
	user := map[string]any{"role": "user", "content": "Is it raining in Lisbon? Use get_weather."}
	body := mustJSON(t, map[string]any{"model": modelName, "instructions": "You are a weather bot.",
		"tools": tools, "input": []any{user}})
	status, _, b := st.doRaw(t, ctx, http.MethodPost, "/v1/responses", body, http.Header{"Accept": {"application/json"}})
	if status != http.StatusOK {
		t.Fatalf("turn 1 = %d %s", status, b)
	}
	var r1 wireResponse
	if err := json.Unmarshal(b, &r1); err != nil {
		t.Fatalf("decode turn 1: %v", err)
	}
	checkCompleted(t, r1)
	fc := checkWeatherCall(t, r1)
	var raw struct {
		Output []json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("decode turn 1 output: %v", err)
	}
	input := []any{user}
	for _, it := range raw.Output {
		input = append(input, it)
	}
	input = append(input, map[string]any{"type": "function_call_output", "call_id": fc.CallID, "output": weatherOutput})
	body = mustJSON(t, map[string]any{"model": modelName, "instructions": "You are a weather bot.",
		"tools": tools, "input": input, "stream": true})
	res2 := checkStream(t, st.postStream(t, ctx, body, "application/json"))
	if res2.Terminal != "response.completed" || !strings.Contains(res2.Response.outputText(), "sunny") {
		t.Errorf("turn 2: terminal %s text %q, want completed, quoting the tool result", res2.Terminal, res2.Response.outputText())
	}
	if p := res2.Response.PreviousResponseID; p != nil && *p != "" {
		t.Errorf("turn 2 previous_response_id = %q, want none (full replay)", *p)
	}
}
