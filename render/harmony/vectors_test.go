package harmony

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func ptr[T any](v T) *T { return &v }

// TestHarmonyVectors renders the conversations of openai/harmony's own tests (src/tests.rs at
// v0.0.8, commit ec7606d) and compares them with its expected outputs, copied unchanged into
// testdata/harmony/vectors. As harmony's tests do, the expected text is trimmed at the end and
// its ids are the text encoded with special tokens.
func TestHarmonyVectors(t *testing.T) {
	enc := testEncoder(t)
	sys := func(effort Effort, channels ...string) Message {
		s := DefaultSystemContent()
		if effort != "" {
			s.Effort = effort
		}
		if channels != nil {
			s.ValidChannels = channels
		}
		return Message{Role: RoleSystem, System: &s}
	}
	user := func(s string) Message { return Message{Role: RoleUser, Parts: []string{s}} }
	robot := Message{Role: RoleDeveloper, Developer: &DeveloperContent{Instructions: ptr("Answer the user's questions like a robot.")}}
	largest := user("What is the capital of the largest country in the world?")
	dated := sys(EffortMedium, "analysis", "final")
	dated.System.StartDate, dated.System.KnowledgeCutoff = "2021-01-01", "2021-01"
	weatherSys := sys(EffortHigh)
	weatherSys.System.StartDate = "2025-06-28"
	tools := []ToolDescription{
		{Name: "get_location", Description: "Gets the location of the user."},
		{Name: "get_current_weather", Description: "Gets the current weather in the provided location.", Parameters: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string","description":"The city and state, e.g. San Francisco, CA"},"format":{"type":"string","enum":["celsius","fahrenheit"],"default":"celsius"}},"required":["location"]}`)},
		{Name: "get_multiple_weathers", Description: "Gets the current weather in the provided list of locations.", Parameters: json.RawMessage(`{"type":"object","properties":{"locations":{"type":"array","items":{"type":"string"},"description":"List of city and state, e.g. [\"San Francisco, CA\", \"New York, NY\"]"},"format":{"type":"string","enum":["celsius","fahrenheit"],"default":"celsius"}},"required":["locations"]}`)},
		{Name: "kitchensink", Description: "A function with various complex schemas.", Parameters: json.RawMessage(`{"description":"params object","type":"object","properties":{"string":{"type":"string","title":"STRING","description":"A string","examples":["hello","world"]},"string_nullable":{"type":"string","nullable":true,"description":"A nullable string","default":"the default"},"string_enum":{"type":"string","enum":["a","b","c"]},"oneof_string_or_number":{"oneOf":[{"type":"string","default":"default_string_in_oneof"},{"type":"number","description":"numbers can happen too"}],"description":"a oneof","default":20}}}`)},
	}
	tests := []struct {
		file string
		msgs []Message
		opts RenderOptions
	}{
		{"test_simple_convo", []Message{sys(""), user("What is 2 + 2?")}, RenderOptions{}},
		{"test_simple_convo_low_effort", []Message{sys(EffortLow), robot, largest}, RenderOptions{}},
		{"test_simple_convo_medium_effort", []Message{sys(EffortMedium), robot, largest}, RenderOptions{}},
		{"test_simple_convo_high_effort", []Message{sys(EffortHigh), robot, largest}, RenderOptions{}},
		{"test_simple_convo_low_effort_no_instruction", []Message{sys(EffortLow), largest}, RenderOptions{}},
		{"test_simple_convo_medium_effort_no_instruction", []Message{sys(EffortMedium), largest}, RenderOptions{}},
		{"test_simple_convo_high_effort_no_instruction", []Message{sys(EffortHigh), largest}, RenderOptions{}},
		{"test_reasoning_system_message", []Message{sys(EffortMedium, "analysis", "final"), user("What is 2 + 2?")}, RenderOptions{}},
		{"test_reasoning_system_message_no_instruction", []Message{sys(EffortHigh, "analysis", "final"), user("What is the best place to eat candy in the world?")}, RenderOptions{}},
		{"test_reasoning_system_message_with_dates", []Message{dated, user("What is 42 * pi?")}, RenderOptions{}},
		{"test_render_functions_with_parameters", []Message{weatherSys, {Role: RoleDeveloper, Developer: &DeveloperContent{Instructions: ptr("Always respond in riddles"), Tools: tools}}, user("What is the weather like in SF?")}, RenderOptions{}},
		{"test_dropping_cot_by_default", []Message{
			user("What is 2 + 2?"),
			{Role: RoleAssistant, Channel: ChannelAnalysis, Parts: []string{"User asks: “What is 2 + 2?” Simple arithmetic. Provide answer."}},
			{Role: RoleAssistant, Channel: ChannelFinal, Parts: []string{"2 + 2 equals 4."}},
			user("What about 9 / 2?"),
		}, RenderOptions{}},
		{"test_does_not_drop_if_ongoing_analysis", []Message{
			user("What is the weather in SF?"),
			{Role: RoleAssistant, Channel: ChannelAnalysis, Parts: []string{"User asks: “What is the weather in SF?” We need to use lookup_weather tool."}},
			{Role: RoleAssistant, Channel: ChannelCommentary, Recipient: "functions.lookup_weather", ContentType: "<|constrain|>json", Parts: []string{`{"location": "San Francisco"}`}},
			{Role: RoleTool, Name: "functions.lookup_weather", Parts: []string{`{"temperature": 20, "description": "sunny"}`}},
		}, RenderOptions{}},
		{"test_preserve_cot", []Message{
			user("What is 2 + 2?"),
			{Role: RoleAssistant, Channel: ChannelAnalysis, Parts: []string{`User asks a simple question: "What is 2 + 2?" The answer: 4.`}},
			{Role: RoleAssistant, Channel: ChannelFinal, Parts: []string{"2 + 2 equals 4."}},
			user("What about 9 / 2?"),
		}, RenderOptions{KeepAnalysis: true}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "harmony", "vectors", tt.file+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			want := strings.TrimRight(strings.ReplaceAll(string(raw), "\r\n", "\n"), " \t\r\n")
			got, err := enc.Render(tt.msgs, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got.Text != want {
				t.Errorf("text mismatch (-want +got):\n%s", cmp.Diff(want, got.Text))
			}
			if diff := cmp.Diff(enc.tok.Encode(want), got.IDs); diff != "" {
				t.Errorf("ids mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
