package server

import (
	"encoding/json"
	"testing"
)

// TestReasoningOff: a family's reasoning switch is off for the values Python's bool() reads as
// false, as vLLM's reasoning parsers read chat_template_kwargs.
func TestReasoningOff(t *testing.T) {
	for _, tt := range []struct {
		kwargs string
		want   bool
	}{
		{`{}`, false}, {`{"thinking":true}`, false}, {`{"thinking":false}`, true}, {`{"thinking":null}`, true},
		{`{"thinking":0}`, true}, {`{"thinking":1}`, false}, {`{"thinking":""}`, true}, {`{"thinking":"no"}`, false},
		{`{"thinking":[]}`, true}, {`{"thinking":{}}`, true}, {`{"enable_thinking":false}`, false},
	} {
		if got := reasoningOff(json.RawMessage(tt.kwargs), "thinking"); got != tt.want {
			t.Errorf("reasoningOff(%s) = %v, want %v", tt.kwargs, got, tt.want)
		}
	}
	if reasoningOff(json.RawMessage(`{"thinking":false}`), "") {
		t.Error("a family without a switch is never off")
	}
}
