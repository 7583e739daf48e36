package sim_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/sim"
)

// TestXMLToolDefinitions: the Qwen3-Coder chat template writes tool definitions as XML
// (<function><name>…<parameters><parameter>…), not JSON lines; the simulator reads them back
// and calls the tool the user names, with arguments from each parameter's type, enum and
// default, in the qwen3_coder format.
func TestXMLToolDefinitions(t *testing.T) {
	t.Parallel()
	tmpl, err := os.ReadFile(filepath.Join("..", "testdata", "render", "qwen3", "qwen3-coder.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := render.LoadModel(os.DirFS(filepath.Join("..", "testdata", "models", "qwen3")), render.Options{ChatTemplate: string(tmpl)})
	if err != nil {
		t.Fatal(err)
	}
	_, ts := newTestServer(t, sim.Options{Tokenizer: m.Tokenizer(), Renderer: sim.ModelRenderer(m), ToolCallParser: "qwen3_coder", MaxModelLen: 8192})
	const tools = `[{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},
{"type":"function","function":{"name":"run_command","description":"Runs a <command>.","parameters":{"type":"object","properties":{"cmd":{"type":"string","description":"Command to run."},"mode":{"type":"string","enum":["safe","unsafe"]},"tty":{"type":"boolean","default":false},"count":{"type":"integer","minimum":3,"maximum":3},"argv":{"type":"array","items":{"type":"string"}}},"required":["cmd"]}}}]`
	tests := []struct{ user, want string }{
		{"What is the weather in Paris? Use get_weather.", "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"},
		{"Show the files with Pwd: call run_command.", "<tool_call>\n<function=run_command>\n<parameter=cmd>\nPwd\n</parameter>\n<parameter=mode>\nsafe\n</parameter>\n<parameter=tty>\nfalse\n</parameter>\n<parameter=count>\n3\n</parameter>\n<parameter=argv>\n[\""},
	}
	for _, tt := range tests {
		status, out := post(t, ts.URL+"/v1/chat/completions", map[string]any{
			"messages": []map[string]any{{"role": "user", "content": tt.user}},
			"tools":    json.RawMessage(tools), "skip_special_tokens": false, "max_tokens": 600})
		if status != 200 {
			t.Fatalf("status %d: %s", status, out)
		}
		var r struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatal(err)
		}
		if got := r.Choices[0].Message.Content; !strings.Contains(got, tt.want) {
			t.Errorf("%q: answer\n%s\nlacks\n%s", tt.user, got, tt.want)
		}
	}
}
