package jinja

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestLoopsOverMessageContent compares with vLLM's detection as the Python oracle reimplements it
// on Jinja2's own tree (tools/oracle/render_oracle.py content_format; testdata/jinja/README.md).
func TestLoopsOverMessageContent(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "jinja", "content_format.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Name, Template string
		OpenAI         bool
	}
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		tmpl, err := Parse(c.Name, c.Template, Options{})
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}
		if got := tmpl.LoopsOverMessageContent(); got != c.OpenAI {
			t.Errorf("%s: LoopsOverMessageContent() = %v, vLLM's walk gives %v", c.Name, got, c.OpenAI)
		}
	}
}
