package main

import (
	"github.com/stitchllm/stitch/configs"
	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/modeldir"
	"github.com/stitchllm/stitch/prepare"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/render/harmony"
)

// harmonyNames are the vLLM parser names of the gpt-oss family (family.Harmony).
var harmonyNames = family.HarmonyNames()

// profileFamily returns the family names a profile is served with: Harmony's when vLLM would
// serve the model through Harmony on /v1/responses (config.json model_type gpt_oss, or
// --tool-call-parser openai), else the profile's own.
func profileFamily(p configs.ModelProfile) (family.Names, error) {
	names := family.Names{ToolCallParser: p.ToolCallParser, ReasoningParser: p.ReasoningParser}
	if names.ToolCallParser == harmonyNames.ToolCallParser {
		return harmonyNames, nil
	}
	d, err := modeldir.Open(p.Dir)
	if err != nil {
		return names, err
	}
	cfg, err := d.Config()
	if err != nil {
		return names, err
	}
	if cfg.Harmony {
		return harmonyNames, nil
	}
	return names, nil
}

// loadProfileModel loads a profile's model: its tokenizer and chat template, or for a Harmony
// model its tokenizer alone and the Harmony engine settings (nil for other models).
func loadProfileModel(p configs.ModelProfile, names family.Names, getenv func(string) string) (*render.Renderer, *prepare.Harmony, error) {
	if names != harmonyNames {
		m, err := loadModel(p.Dir, p.ChatTemplate)
		return m, nil, err
	}
	d, err := modeldir.Open(p.Dir)
	if err != nil {
		return nil, nil, err
	}
	m, enc, err := d.HarmonyRenderer()
	if err != nil {
		return nil, nil, err
	}
	return m, &prepare.Harmony{Encoder: enc, Options: harmonyServeOptions(getenv)}, nil
}

// harmonyServeOptions reads vLLM's environment variables for Harmony, so stitch builds the
// prompts the vLLM beside it would: VLLM_SYSTEM_START_DATE pins the conversation start date
// (unset: today's date on every turn, which changes every prompt's first tokens when the day
// rolls over), VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS (vLLM: bool(int(value))) moves the
// instructions into the system message.
func harmonyServeOptions(getenv func(string) string) harmony.Options {
	v := getenv("VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS")
	return harmony.Options{StartDate: getenv("VLLM_SYSTEM_START_DATE"), InstructionsInSystem: v != "" && v != "0"}
}
