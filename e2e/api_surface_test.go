package e2e

import (
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// TestAPISurface drives the Responses API surface of issue 18 with the official Go SDK: tool
// policy (allowed_tools, max_tool_calls), history checks, input_tokens, input_items' shape, the
// fields stitch refuses, and the routes it does not serve.
func TestAPISurface(t *testing.T) {
	st := requireStack(t)
	tests := []struct {
		name string
		run  func(t *testing.T, st *stack)
	}{
		{"allowed_tools", testAllowedTools},
		{"max_tool_calls", testMaxToolCalls},
		{"history_checks", testHistoryChecks},
		{"input_tokens", testInputTokens},
		{"input_items_shape", testInputItemsShape},
		{"refused_fields", testRefusedFields},
		{"retrieve_stream", testRetrieveStream},
		{"unknown_routes", testUnknownRoutes},
		{"logprobs", testLogprobs}, // logprobs_test.go
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, st)
		})
	}
}

func timeTool() responses.ToolUnionParam {
	return responses.ToolParamOfFunction("get_time", map[string]any{"type": "object", "properties": map[string]any{}}, false)
}

func callNames(r *responses.Response) []string {
	var names []string
	for _, it := range r.Output {
		if it.Type == "function_call" {
			names = append(names, it.AsFunctionCall().Name)
		}
	}
	return names
}

// testAllowedTools: the user names get_weather, which the scripted model would call; allowed_tools
// offers only get_time, so that is the only tool the model sees and calls.
func testAllowedTools(t *testing.T, st *stack) {
	c := st.client()
	ctx := testContext(t)
	for _, mode := range []responses.ToolChoiceAllowedMode{responses.ToolChoiceAllowedModeAuto, responses.ToolChoiceAllowedModeRequired} {
		resp, err := c.Responses.New(ctx, responses.ResponseNewParams{
			Model: modelName,
			Tools: []responses.ToolUnionParam{weatherTool(), timeTool()},
			ToolChoice: responses.ResponseNewParamsToolChoiceUnion{OfAllowedTools: &responses.ToolChoiceAllowedParam{
				Mode: mode, Tools: []map[string]any{{"type": "function", "name": "get_time"}},
			}},
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Use get_weather for Paris.")},
		})
		if err != nil {
			t.Fatalf("mode %s: %v", mode, err)
		}
		if names := callNames(resp); len(names) != 1 || names[0] != "get_time" {
			t.Errorf("mode %s: calls %v, want [get_time] (get_weather is not allowed)", mode, names)
		}
		if len(resp.Tools) != 2 {
			t.Errorf("mode %s: %d tools echoed, want both", mode, len(resp.Tools))
		}
	}
	// A tool the request does not define cannot be allowed.
	_, err := c.Responses.New(ctx, responses.ResponseNewParams{
		Model: modelName,
		Tools: []responses.ToolUnionParam{weatherTool()},
		ToolChoice: responses.ResponseNewParamsToolChoiceUnion{OfAllowedTools: &responses.ToolChoiceAllowedParam{
			Mode: responses.ToolChoiceAllowedModeAuto, Tools: []map[string]any{{"type": "function", "name": "nope"}},
		}},
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hi")},
	})
	wantAPIError(t, err, http.StatusBadRequest, "invalid_request_error", "", "tool_choice.tools[0].name")
}

// testMaxToolCalls: max_tool_calls 0 drops the call the model makes; 1 keeps it.
func testMaxToolCalls(t *testing.T, st *stack) {
	c := st.client()
	ctx := testContext(t)
	for _, tt := range []struct {
		max   int64
		calls int
	}{{0, 0}, {1, 1}} {
		resp, err := c.Responses.New(ctx, responses.ResponseNewParams{
			Model: modelName, Tools: []responses.ToolUnionParam{weatherTool()}, MaxToolCalls: openai.Int(tt.max),
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Weather in Rome? Use get_weather.")},
		})
		if err != nil {
			t.Fatalf("max_tool_calls %d: %v", tt.max, err)
		}
		if n := len(callNames(resp)); n != tt.calls {
			t.Errorf("max_tool_calls %d: %d calls, want %d", tt.max, n, tt.calls)
		}
	}
}

// testHistoryChecks: an output for an unknown call and a user turn over a pending call are 400s,
// as OpenAI answers them.
func testHistoryChecks(t *testing.T, st *stack) {
	c := st.client()
	ctx := testContext(t)
	tools := []responses.ToolUnionParam{weatherTool()}
	resp1, err := c.Responses.New(ctx, responses.ResponseNewParams{
		Model: modelName, Tools: tools,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("What is the weather in Paris? Use get_weather.")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(callNames(resp1)) != 1 {
		t.Fatalf("no call to continue from: %s", resp1.RawJSON())
	}
	good := responses.ResponseInputItemParamOfFunctionCallOutput(weatherOutput)
	var callID string
	for _, it := range resp1.Output {
		if it.Type == "function_call" {
			callID = it.AsFunctionCall().CallID
		}
	}
	good.OfFunctionCallOutput.CallID = openai.String(callID)
	bad := responses.ResponseInputItemParamOfFunctionCallOutput("{}")
	bad.OfFunctionCallOutput.CallID = openai.String("call_unknown")
	_, err = c.Responses.New(ctx, responses.ResponseNewParams{
		Model: modelName, Tools: tools, PreviousResponseID: openai.String(resp1.ID),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{good, bad}},
	})
	e := wantAPIError(t, err, http.StatusBadRequest, "invalid_request_error", "", "input[1].call_id")
	if e != nil && e.Message != "No tool call found for function call output with call_id call_unknown." {
		t.Errorf("message = %q", e.Message)
	}
	_, err = c.Responses.New(ctx, responses.ResponseNewParams{
		Model: modelName, Tools: tools, PreviousResponseID: openai.String(resp1.ID),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Never mind, tell me a joke.")},
	})
	e = wantAPIError(t, err, http.StatusBadRequest, "invalid_request_error", "", "input")
	if e != nil && e.Message != "No tool output found for function call "+callID+"." {
		t.Errorf("message = %q", e.Message)
	}
}

// testInputTokens: the count is the usage.input_tokens a create with the same body reports.
func testInputTokens(t *testing.T, st *stack) {
	c := st.client()
	ctx := testContext(t)
	prompt := responses.InputTokenCountParamsInputUnion{OfString: openai.String("Count my tokens, please.")}
	input := responses.ResponseNewParamsInputUnion{OfString: openai.String("Count my tokens, please.")}
	var last *responses.Response
	for _, tools := range [][]responses.ToolUnionParam{{weatherTool()}, nil} {
		count, err := c.Responses.InputTokens.Count(ctx, responses.InputTokenCountParams{
			Model: openai.String(modelName), Instructions: openai.String("Be brief."), Tools: tools, Input: prompt,
		})
		if err != nil {
			t.Fatalf("InputTokens.Count: %v", err)
		}
		resp, err := c.Responses.New(ctx, responses.ResponseNewParams{
			Model: modelName, Instructions: openai.String("Be brief."), Tools: tools, Input: input,
		})
		if err != nil {
			t.Fatal(err)
		}
		if count.InputTokens != resp.Usage.InputTokens || count.InputTokens == 0 {
			t.Errorf("%d tools: input_tokens = %d, create's usage.input_tokens = %d", len(tools), count.InputTokens, resp.Usage.InputTokens)
		}
		last = resp
	}
	// A continuation counts the stored conversation too.
	next, err := c.Responses.InputTokens.Count(ctx, responses.InputTokenCountParams{
		Model: openai.String(modelName), PreviousResponseID: openai.String(last.ID),
		Input: responses.InputTokenCountParamsInputUnion{OfString: openai.String("And more.")},
	})
	if err != nil {
		t.Fatal(err)
	}
	resp2, err := c.Responses.New(ctx, responses.ResponseNewParams{
		Model: modelName, PreviousResponseID: openai.String(last.ID),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("And more.")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if next.InputTokens != resp2.Usage.InputTokens {
		t.Errorf("continuation input_tokens = %d, create's usage.input_tokens = %d", next.InputTokens, resp2.Usage.InputTokens)
	}
}

// testInputItemsShape: listed message items carry content parts and a status.
func testInputItemsShape(t *testing.T, st *stack) {
	c := st.client()
	ctx := testContext(t)
	resp, err := c.Responses.New(ctx, responses.ResponseNewParams{
		Model: modelName, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Shape check.")},
	})
	if err != nil {
		t.Fatal(err)
	}
	page, err := c.Responses.InputItems.List(ctx, resp.ID, responses.InputItemListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 {
		t.Fatalf("%d input items, want 1", len(page.Data))
	}
	msg := page.Data[0].AsMessage()
	if msg.Status != "completed" || msg.Role != "user" || len(msg.Content) != 1 || msg.Content[0].Type != "input_text" || msg.Content[0].Text != "Shape check." {
		t.Errorf("input item = %s, want a completed user message with one input_text part", page.Data[0].RawJSON())
	}
}

// testRefusedFields: values stitch cannot honour are 400s naming the field.
func testRefusedFields(t *testing.T, st *stack) {
	c := st.client()
	ctx := testContext(t)
	in := responses.ResponseNewParamsInputUnion{OfString: openai.String("Hi")}
	for _, tt := range []struct {
		params responses.ResponseNewParams
		param  string
	}{
		{responses.ResponseNewParams{Model: modelName, Input: in, Include: []responses.ResponseIncludable{"bogus.value"}}, "include[0]"},
		{responses.ResponseNewParams{Model: modelName, Input: in, TopLogprobs: openai.Int(99)}, "top_logprobs"},
		{responses.ResponseNewParams{Model: modelName, Input: in, Background: openai.Bool(true), Store: openai.Bool(false)}, "background"},
		{responses.ResponseNewParams{Model: modelName, Input: in, Text: responses.ResponseTextConfigParam{Verbosity: "loud"}}, "text.verbosity"},
	} {
		_, err := c.Responses.New(ctx, tt.params)
		wantAPIError(t, err, http.StatusBadRequest, "invalid_request_error", "", tt.param)
	}
	// Ignored fields are accepted.
	_, err := c.Responses.New(ctx, responses.ResponseNewParams{
		Model: modelName, Input: in, ServiceTier: responses.ResponseNewParamsServiceTierFlex, PromptCacheKey: openai.String("k"),
		Text: responses.ResponseTextConfigParam{Verbosity: responses.ResponseTextConfigVerbosityLow}, TopLogprobs: openai.Int(0),
		Include: []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent},
	})
	if err != nil {
		t.Errorf("ignored fields: %v", err)
	}
}

// testRetrieveStream: the SDK's streamed retrieve gets an error, not zero events.
func testRetrieveStream(t *testing.T, st *stack) {
	c := st.client()
	ctx := testContext(t)
	resp, err := c.Responses.New(ctx, responses.ResponseNewParams{
		Model: modelName, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hi")},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := c.Responses.GetStreaming(ctx, resp.ID, responses.ResponseGetParams{StartingAfter: openai.Int(2)})
	n := 0
	for s.Next() {
		n++
	}
	wantAPIError(t, s.Err(), http.StatusBadRequest, "invalid_request_error", "", "stream")
	if n != 0 {
		t.Errorf("%d events, want none", n)
	}
}

// testUnknownRoutes: routes stitch does not serve are OpenAI's 404, not the model server's.
func testUnknownRoutes(t *testing.T, st *stack) {
	c := st.client()
	ctx := testContext(t)
	_, err := c.Responses.Compact(ctx, responses.ResponseCompactParams{Model: responses.ResponseCompactParamsModel(modelName)}, option.WithMaxRetries(0))
	wantAPIError(t, err, http.StatusNotFound, "invalid_request_error", "unknown_url", "")
}
