package prepare

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/render/bpe"
	"github.com/stitchllm/stitch/render/harmony"
)

func gptossEncoder(t *testing.T) *harmony.Encoder {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "models", "gptoss", "tokenizer.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if raw, err = io.ReadAll(zr); err != nil {
		t.Fatal(err)
	}
	tok, err := bpe.Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := harmony.NewEncoder(tok)
	if err != nil {
		t.Fatal(err)
	}
	return enc
}

// TestHarmonyRender: New picks the Harmony engine, whose ids are render/harmony's full render of
// the same request (this request's instructions, tools and effort; the start date pinned or today).
func TestHarmonyRender(t *testing.T) {
	enc := gptossEncoder(t)
	now := func() time.Time { return time.Date(2026, 3, 4, 23, 0, 0, 0, time.UTC) }
	items := []json.RawMessage{
		json.RawMessage(`{"role":"user","content":"What is the weather in Paris?"}`),
		json.RawMessage(`{"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"reasoning_text","text":"Call the tool."}]}`),
		json.RawMessage(`{"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"}`),
		json.RawMessage(`{"type":"function_call_output","call_id":"c1","output":"sunny"}`),
	}
	tools := json.RawMessage(`[{"type":"function","name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]`)
	for _, c := range []struct {
		name, pinned, want string
	}{{"pinned", "2025-01-02", "2025-01-02"}, {"today", "", "2026-03-04"}} {
		t.Run(c.name, func(t *testing.T) {
			eng := New(ArtifactOptions{Harmony: &Harmony{Encoder: enc, Options: harmony.Options{StartDate: c.pinned}, Now: now}})
			if _, ok := eng.(HarmonyRender); !ok {
				t.Fatalf("New returned %T", eng)
			}
			in := &Input{PreviousID: "resp_1", Instructions: "Be brief.", ReasoningEffort: "high", Items: items, Tools: tools}
			p, err := eng.Prepare(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			s := "Be brief."
			_, want, err := enc.RenderResponses(harmony.Request{Instructions: &s, Effort: "high", Items: items, Tools: tools}, harmony.Options{StartDate: c.want})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.IDs, want.IDs) || p.Text != want.Text {
				t.Fatalf("ids differ from the full render:\n%s\nwant\n%s", p.Text, want.Text)
			}
			if p.Outcome != OutcomeDisabled || p.ReasoningOpen || p.Reused != 0 {
				t.Errorf("outcome %s, reasoning open %v, reused %d", p.Outcome, p.ReasoningOpen, p.Reused)
			}
			if !bytes.Contains([]byte(p.Text), []byte("Current date: "+c.want)) || !bytes.Contains([]byte(p.Text), []byte("Reasoning: high")) {
				t.Errorf("system message lacks the date or effort:\n%s", p.Text)
			}
		})
	}
	t.Run("bad effort", func(t *testing.T) {
		eng := New(ArtifactOptions{Harmony: &Harmony{Encoder: enc, Now: now}})
		_, err := eng.Prepare(context.Background(), &Input{ReasoningEffort: "minimal", Items: items[:1]})
		var ie *render.InputError
		if !errors.As(err, &ie) || ie.Param != "reasoning.effort" {
			t.Fatalf("err = %v", err)
		}
	})
}
