package family_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/stream"
)

// TestTurnTools: the request's tools reach the output parser through Turn.Tools, so a
// qwen3_coder call's values are converted by their schema type as vLLM's parser does (a boolean
// parameter written "false" is false, not "false"; Codex rejects a string there). Without the
// tools every value stays a string.
func TestTurnTools(t *testing.T) {
	m := loadQwen3(t)
	f, err := family.New(family.Names{ToolCallParser: "qwen3_coder"}, vocabulary(m))
	if err != nil {
		t.Fatal(err)
	}
	tools := []stream.ToolSchema{{Name: "exec_command", Parameters: json.RawMessage(
		`{"type":"object","properties":{"cmd":{"type":"string"},"login":{"type":"boolean"},"yield_time_ms":{"type":"number"},"prefix_rule":{"type":"array","items":{"type":"string"}}}}`)}}
	out := "<tool_call>\n<function=exec_command>\n<parameter=cmd>\nls\n</parameter>\n<parameter=login>\nfalse\n</parameter>\n" +
		"<parameter=yield_time_ms>\n3\n</parameter>\n<parameter=prefix_rule>\n[\"ls\"]\n</parameter>\n</function>\n</tool_call>"
	for _, tt := range []struct {
		tools []stream.ToolSchema
		want  string
	}{
		{tools, `{"cmd": "ls", "login": false, "yield_time_ms": 3, "prefix_rule": ["ls"]}`},
		{nil, `{"cmd": "ls", "login": "false", "yield_time_ms": "3", "prefix_rule": "[\"ls\"]"}`},
	} {
		p := f.NewParser(m.Tokenizer().NewDecodeStream(), family.Turn{ParallelToolCalls: true, Tools: tt.tools})
		var pieces []stream.Piece
		for _, id := range append(m.Encode(out), m.StopTokenIDs[0]) {
			pieces = p.Append(pieces, id)
		}
		pieces = p.Finish(pieces)
		var args strings.Builder
		for _, pc := range pieces {
			if pc.Kind == stream.PieceArguments {
				args.WriteString(pc.Text)
			}
		}
		if got := args.String(); got != tt.want {
			t.Errorf("tools %v: arguments %s, want %s", tt.tools != nil, got, tt.want)
		}
	}
}
