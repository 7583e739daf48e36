package main

import (
	"path/filepath"
	"testing"

	"github.com/stitchllm/stitch/render"
)

// TestRendersTools: serve warns about a chat template that shows the model no tools. Llama 3.0's
// template (the testdata llama3_1 directory's), DeepSeek V3's and Gemma 3's official ones render
// none; vLLM's tool templates and the Qwen and Llama 3.1+ templates do.
func TestRendersTools(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		dir, template string
		want          bool
	}{
		{"qwen3", "", true},
		{"llama3_1", "", false},
		{"llama3_1", "llama3/llama-3.1.jinja", true},
		{"llama3_2", "", true},
		{"deepseek_v3", "", false},
		{"deepseek_v3", "deepseek_v3/vllm-tool-deepseekv31.jinja", true},
		{"gemma3", "", false},
		{"gemma3", "gemma3/vllm-tool-gemma3-pythonic.jinja", true},
	} {
		tmpl := ""
		if tt.template != "" {
			tmpl = filepath.Join("testdata", "render", tt.template)
		}
		m, err := loadModel(filepath.Join("testdata", "models", tt.dir), tmpl)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.RendersTools(); got != tt.want {
			t.Errorf("%s %s: RendersTools() = %v, want %v", tt.dir, tt.template, got, tt.want)
		}
		// The input budget's lower bound counts a tool's name only where the template shows it.
		if tx := m.ToolTextRendered(); tx.Name != tt.want || (tt.want && !tx.Description) || (!tt.want && tx != render.ToolText{}) {
			t.Errorf("%s %s: ToolTextRendered() = %+v", tt.dir, tt.template, tx)
		} else {
			t.Logf("%s %s: %+v", tt.dir, tt.template, tx)
		}
	}
}
