package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stitchllm/stitch/configs"
	"github.com/stitchllm/stitch/family"
)

// TestProfileFamily: vLLM's selection of Harmony (config.json model_type gpt_oss, or
// --tool-call-parser openai) picks the gpt-oss family; other profiles keep their names.
func TestProfileFamily(t *testing.T) {
	gptoss, other := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(gptoss, "config.json"), []byte(`{"model_type":"gpt_oss"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "config.json"), []byte(`{"model_type":"qwen3"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	qwen := family.Names{ToolCallParser: "hermes", ReasoningParser: "qwen3"}
	for _, c := range []struct {
		name string
		p    configs.ModelProfile
		want family.Names
	}{
		{"config gpt_oss", configs.ModelProfile{Dir: gptoss, ToolCallParser: "hermes", ReasoningParser: "qwen3"}, harmonyNames},
		{"openai parser", configs.ModelProfile{Dir: other, ToolCallParser: "openai"}, harmonyNames},
		{"openai pair", configs.ModelProfile{Dir: t.TempDir(), ToolCallParser: "openai", ReasoningParser: "openai_gptoss"}, harmonyNames},
		{"qwen3", configs.ModelProfile{Dir: other, ToolCallParser: "hermes", ReasoningParser: "qwen3"}, qwen},
		{"no config.json", configs.ModelProfile{Dir: t.TempDir(), ToolCallParser: "hermes", ReasoningParser: "qwen3"}, qwen},
	} {
		got, err := profileFamily(c.p)
		if err != nil || got != c.want {
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.want)
		}
	}
	if err := family.Check(harmonyNames); err != nil {
		t.Fatal(err)
	}
}

func TestHarmonyServeOptions(t *testing.T) {
	env := map[string]string{"VLLM_SYSTEM_START_DATE": "2025-06-01", "VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS": "1"}
	o := harmonyServeOptions(func(k string) string { return env[k] })
	if o.StartDate != "2025-06-01" || !o.InstructionsInSystem {
		t.Errorf("%+v", o)
	}
	o = harmonyServeOptions(func(string) string { return "" })
	if o.StartDate != "" || o.InstructionsInSystem { // unpinned: today's date per turn
		t.Errorf("%+v", o)
	}
	env["VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS"] = "0"
	if harmonyServeOptions(func(k string) string { return env[k] }).InstructionsInSystem {
		t.Error("0 moved instructions")
	}
}
