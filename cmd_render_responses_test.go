package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/render/harmony"
	"github.com/stitchllm/stitch/server"
)

// TestRenderResponsesHarmony renders the first golden cases through the CLI path and compares
// with openai_harmony's output (testdata/harmony).
func TestRenderResponsesHarmony(t *testing.T) {
	gz, err := os.ReadFile(filepath.Join("testdata", "models", "gptoss", "tokenizer.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	tokJSON, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{"tokenizer.json": {Data: tokJSON}, "config.json": {Data: []byte(`{"model_type":"gpt_oss"}`)}}
	if cfg, _ := fsys.ReadFile("config.json"); !harmony.IsHarmonyModel(cfg) {
		t.Fatal("config.json not recognised as gpt-oss")
	}
	var cases []struct {
		Name    string `json:"name"`
		Request string `json:"request"`
		Options struct {
			StartDate            string `json:"start_date"`
			InstructionsInSystem bool   `json:"instructions_in_system"`
		} `json:"options"`
	}
	var golden []struct {
		IDs  []uint32 `json:"ids"`
		Text string   `json:"text"`
	}
	for name, v := range map[string]any{"cases.json": &cases, "golden.json": &golden} {
		raw, err := os.ReadFile(filepath.Join("testdata", "harmony", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatal(err)
		}
	}
	var in strings.Builder
	var want []renderOutput
	for i, c := range cases {
		if c.Options.StartDate != "2025-06-28" || c.Options.InstructionsInSystem {
			continue
		}
		in.WriteString(c.Request + "\n")
		want = append(want, renderOutput{Text: golden[i].Text, Tokens: golden[i].IDs})
	}
	var out bytes.Buffer
	opts := harmony.Options{StartDate: harmonyStartDate("2025-06-28", nil, time.Time{})}
	if err := renderResponsesHarmony(context.Background(), fsys, opts, strings.NewReader(in.String()), &out); err != nil {
		t.Fatal(err)
	}
	var got []renderOutput
	dec := json.NewDecoder(&out)
	for dec.More() {
		var o renderOutput
		if err := dec.Decode(&o); err != nil {
			t.Fatal(err)
		}
		got = append(got, o)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("render --responses output (-want +got):\n%s", diff)
	}

	err = renderResponsesHarmony(context.Background(), fsys, opts, strings.NewReader(`{"input":"ok"}`+"\n"+`{"input":3}`+"\n"), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad line: err = %v, want it to name line 2", err)
	}
}

func TestHarmonyStartDate(t *testing.T) {
	env := func(v string) func(string) string { return func(string) string { return v } }
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, tt := range []struct{ flag, env, want string }{
		{"2025-01-01", "2024-01-01", "2025-01-01"}, {"", "2024-01-01", "2024-01-01"}, {"", "", "2026-12-01"},
	} {
		if got := harmonyStartDate(tt.flag, env(tt.env), now); got != tt.want {
			t.Errorf("harmonyStartDate(%q, env %q) = %s, want %s", tt.flag, tt.env, got, tt.want)
		}
	}
}

// TestRenderResponsesTemplate: `stitch render --responses` on the bundled Qwen3 model renders the
// Responses-shaped golden requests (testdata/render/responses_cases.jsonl, mapped to messages
// and rendered by the Python oracle) to the oracle's text and ids, through the same request
// preparation as POST /v1/responses (server.Server.Preview). Cases that serve answers 400 (an
// output whose call is not in the input, which OpenAI refuses too) are skipped.
func TestRenderResponsesTemplate(t *testing.T) {
	m, err := loadModel("", "")
	if err != nil {
		t.Fatal(err)
	}
	cases := readLinesFile(t, filepath.Join("testdata", "render", "responses_cases.jsonl"))
	texts := readLinesFile(t, filepath.Join("testdata", "render", "responses-qwen3.text.jsonl"))
	ids := readLinesFile(t, filepath.Join("testdata", "render", "responses-qwen3.ids.jsonl"))
	checked := 0
	for i, c := range cases {
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(c, &probe); err != nil {
			t.Fatal(err)
		}
		if _, ok := probe["chat_template_kwargs"]; ok {
			continue // not a Responses field: the golden sets the template kwargs directly
		}
		name := string(probe["name"])
		delete(probe, "name")
		body, err := json.Marshal(probe)
		if err != nil {
			t.Fatal(err)
		}
		var want renderOutput
		if err := json.Unmarshal(texts[i], &want); err != nil {
			t.Fatal(err)
		}
		var tokens struct {
			IDs []uint32 `json:"ids"`
		}
		if err := json.Unmarshal(ids[i], &tokens); err != nil {
			t.Fatal(err)
		}
		want.Tokens = tokens.IDs
		var out bytes.Buffer
		err = renderResponsesTemplate(context.Background(), m, family.Names{}, bytes.NewReader(append(body, '\n')), &out)
		var ae *server.APIError
		if errors.As(err, &ae) && ae.Status == 400 {
			t.Logf("case %s: %v", name, err)
			continue
		}
		if err != nil {
			t.Fatalf("case %s: %v", name, err)
		}
		var got renderOutput
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("case %s (-oracle +render --responses):\n%s", name, diff)
		}
		checked++
	}
	if checked < 40 {
		t.Errorf("only %d cases checked", checked)
	}
}

func readLinesFile(t *testing.T, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Split(bytes.TrimSpace(data), []byte("\n"))
}
