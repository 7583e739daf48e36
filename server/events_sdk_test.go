package server_test

import (
	"bufio"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/stream"
)

// sdkStreamEvents maps each Responses stream event type of the Go SDK that stitch can emit to the
// JSON members the SDK marks required (api:"required"), read from the SDK's own structs.
func sdkStreamEvents(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, ev := range []any{
		responses.ResponseCreatedEvent{}, responses.ResponseQueuedEvent{}, responses.ResponseInProgressEvent{},
		responses.ResponseCompletedEvent{}, responses.ResponseIncompleteEvent{}, responses.ResponseFailedEvent{},
		responses.ResponseOutputItemAddedEvent{}, responses.ResponseOutputItemDoneEvent{},
		responses.ResponseContentPartAddedEvent{}, responses.ResponseContentPartDoneEvent{},
		responses.ResponseTextDeltaEvent{}, responses.ResponseTextDoneEvent{},
		responses.ResponseReasoningTextDeltaEvent{}, responses.ResponseReasoningTextDoneEvent{},
		responses.ResponseFunctionCallArgumentsDeltaEvent{}, responses.ResponseFunctionCallArgumentsDoneEvent{},
		responses.ResponseErrorEvent{},
	} {
		ty := reflect.TypeOf(ev)
		f, ok := ty.FieldByName("Type")
		if !ok || f.Tag.Get("default") == "" {
			t.Fatalf("SDK %s has no Type with a default", ty.Name())
		}
		var required []string
		for i := range ty.NumField() {
			if sf := ty.Field(i); sf.Tag.Get("api") == "required" {
				name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
				required = append(required, name)
			}
		}
		out[f.Tag.Get("default")] = required
	}
	return out
}

// TestStreamEventsAreSDKEvents: every event type stitch's stream package names is one of the Go
// SDK's stream event types, and every event of real streams (foreground and background, text,
// reasoning and a tool call) carries each member the SDK marks required for its type.
func TestStreamEventsAreSDKEvents(t *testing.T) {
	sdk := sdkStreamEvents(t)
	for _, ty := range []string{stream.EventResponseCreated, stream.EventResponseQueued, stream.EventResponseInProgress,
		stream.EventResponseCompleted, stream.EventResponseIncomplete, stream.EventResponseFailed,
		stream.EventOutputItemAdded, stream.EventOutputItemDone, stream.EventContentPartAdded, stream.EventContentPartDone,
		stream.EventOutputTextDelta, stream.EventOutputTextDone, stream.EventReasoningTextDelta, stream.EventReasoningTextDone,
		stream.EventFunctionArgumentsDelta, stream.EventFunctionArgumentsDone} {
		if _, ok := sdk[ty]; !ok {
			t.Errorf("stitch emits %q, which is no Go SDK stream event type", ty)
		}
	}
	c := newConvStack(t)
	tools := `"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]`
	seen := map[string]bool{}
	for _, body := range []string{
		`{"model":"qwen3","input":"Hello.","stream":true}`,
		`{"model":"qwen3","input":"Weather in Paris?",` + tools + `,"stream":true}`,
		`{"model":"qwen3","input":"Hello.","stream":true,"background":true}`,
	} {
		req, err := http.NewRequestWithContext(t.Context(), "POST", c.url+"/v1/responses", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer key-a")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			ev := gjson.Parse(data)
			ty := ev.Get("type").Str
			types = append(types, ty)
			seen[ty] = true
			required, ok := sdk[ty]
			if !ok {
				t.Errorf("%s: event %q is no Go SDK stream event type", body, ty)
				continue
			}
			for _, k := range required {
				if !ev.Get(k).Exists() {
					t.Errorf("%s: %s lacks %q, which the SDK requires: %.200s", body, ty, k, data)
				}
			}
		}
		resp.Body.Close()
		if strings.Contains(body, `"background":true`) {
			if len(types) < 3 || types[0] != stream.EventResponseCreated || types[1] != stream.EventResponseQueued || types[2] != stream.EventResponseInProgress {
				t.Errorf("background stream begins %v, want created, queued, in_progress", types[:min(3, len(types))])
			}
		}
	}
	for _, ty := range []string{stream.EventResponseQueued, stream.EventReasoningTextDelta, stream.EventOutputTextDelta, stream.EventFunctionArgumentsDone} {
		if !seen[ty] {
			t.Errorf("no stream of the test carried %s: the check did not cover it", ty)
		}
	}
}
