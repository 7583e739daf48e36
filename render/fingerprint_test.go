package render

import (
	"encoding/json"
	"testing"
)

// TestToolsDigest: the digest follows what the template sees — parameters, description, extra
// fields — and not the client's spacing.
func TestToolsDigest(t *testing.T) {
	desc := "Read a file."
	base := []Tool{{Name: "read", Description: &desc, Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}}
	spaced := []Tool{{Name: "read", Description: &desc, Parameters: json.RawMessage("{ \"type\" : \"object\",\n \"properties\": {\"path\": {\"type\": \"string\"}} }")}}
	if ToolsDigest(base) != ToolsDigest(spaced) {
		t.Error("re-spaced parameters change the digest")
	}
	other := "Read a whole file."
	for name, changed := range map[string][]Tool{
		"name":        {{Name: "open", Description: &desc, Parameters: base[0].Parameters}},
		"description": {{Name: "read", Description: &other, Parameters: base[0].Parameters}},
		"parameters":  {{Name: "read", Description: &desc, Parameters: json.RawMessage(`{"type":"object"}`)}},
		"extra":       {{Name: "read", Description: &desc, Parameters: base[0].Parameters, FunctionExtra: []Field{{Key: "strict", Value: json.RawMessage("true")}}}},
		"none":        nil,
	} {
		if ToolsDigest(changed) == ToolsDigest(base) {
			t.Errorf("%s changed but the digest did not", name)
		}
	}
}
