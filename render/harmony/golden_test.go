package harmony

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stitchllm/stitch/render/bpe"
)

var (
	encOnce sync.Once
	encVal  *Encoder
	encErr  error
)

// testEncoder loads gpt-oss's tokenizer.json from testdata/models.
func testEncoder(t testing.TB) *Encoder {
	t.Helper()
	encOnce.Do(func() {
		var raw []byte
		raw, encErr = os.ReadFile(filepath.Join("..", "..", "testdata", "models", "gptoss", "tokenizer.json.gz"))
		if encErr != nil {
			return
		}
		var zr *gzip.Reader
		if zr, encErr = gzip.NewReader(bytes.NewReader(raw)); encErr != nil {
			return
		}
		if raw, encErr = io.ReadAll(zr); encErr != nil {
			return
		}
		var tok *bpe.Tokenizer
		if tok, encErr = bpe.Load(raw); encErr != nil {
			return
		}
		encVal, encErr = NewEncoder(tok)
	})
	if encErr != nil {
		t.Fatalf("gpt-oss encoder: %v", encErr)
	}
	return encVal
}

// goldenCase is one record of testdata/harmony/cases.json (tools/oracle/harmony_cases.py).
type goldenCase struct {
	Name    string `json:"name"`
	Options struct {
		StartDate            string `json:"start_date"`
		InstructionsInSystem bool   `json:"instructions_in_system"`
	} `json:"options"`
	Request  string          `json:"request"`
	Messages json.RawMessage `json:"messages"`
}

// goldenRender is one record of testdata/harmony/golden.json (tools/oracle/harmony_render.mjs).
type goldenRender struct {
	Name string   `json:"name"`
	IDs  []uint32 `json:"ids"`
	Text string   `json:"text"`
}

func readJSON(t testing.TB, name string, v any) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "harmony", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// TestGoldenResponses checks both layers against the oracles on every golden case: the Harmony
// messages FromResponses builds against vLLM's mapping (harmony_cases.py), and the ids and text
// Render produces against openai_harmony itself (harmony_render.mjs).
func TestGoldenResponses(t *testing.T) {
	enc := testEncoder(t)
	var cases []goldenCase
	var renders []goldenRender
	readJSON(t, "cases.json", &cases)
	readJSON(t, "golden.json", &renders)
	if len(cases) != len(renders) || len(cases) < 100 {
		t.Fatalf("%d cases, %d renders: regenerate testdata/harmony (see its README)", len(cases), len(renders))
	}
	for i, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			want := renders[i]
			if want.Name != c.Name {
				t.Fatalf("golden.json[%d] is %q", i, want.Name)
			}
			req, err := RequestFromBody([]byte(c.Request))
			if err != nil {
				t.Fatalf("RequestFromBody: %v", err)
			}
			opts := Options{StartDate: c.Options.StartDate, InstructionsInSystem: c.Options.InstructionsInSystem}
			conv, p, err := enc.RenderResponses(req, opts)
			if err != nil {
				t.Fatalf("RenderResponses: %v", err)
			}
			if diff := cmp.Diff(decodeAny(t, c.Messages), decodeAny(t, oracleJSON(t, conv.Messages))); diff != "" {
				t.Errorf("messages differ from vLLM's mapping (-want +got):\n%s", diff)
			}
			if p.Text != want.Text {
				t.Errorf("text differs from openai_harmony:\n%s", cmp.Diff(want.Text, p.Text))
			}
			if diff := cmp.Diff(want.IDs, p.IDs); diff != "" {
				t.Errorf("ids differ from openai_harmony (-want +got):\n%s", diff)
			}
		})
	}
}

func decodeAny(t *testing.T, raw []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// oracleJSON writes msgs in openai_harmony's JSON message form, as harmony_cases.py does.
func oracleJSON(t *testing.T, msgs []Message) []byte {
	t.Helper()
	type content map[string]any
	var out []map[string]any
	for _, m := range msgs {
		o := map[string]any{"role": string(m.Role)}
		if m.Name != "" {
			o["name"] = m.Name
		}
		if m.Recipient != "" {
			o["recipient"] = m.Recipient
		}
		if m.Channel != "" {
			o["channel"] = m.Channel
		}
		if m.ContentType != "" {
			o["content_type"] = m.ContentType
		}
		var cs []content
		if s := m.System; s != nil {
			cs = append(cs, content{
				"type": "system_content", "model_identity": s.ModelIdentity, "reasoning_effort": map[Effort]string{EffortLow: "Low", EffortMedium: "Medium", EffortHigh: "High"}[s.Effort],
				"conversation_start_date": s.StartDate, "knowledge_cutoff": s.KnowledgeCutoff, "tools": nil,
				"channel_config": map[string]any{"valid_channels": s.ValidChannels, "channel_required": s.ChannelRequired},
			})
		}
		if d := m.Developer; d != nil {
			dc := content{"type": "developer_content", "instructions": d.Instructions, "tools": nil}
			if len(d.Tools) > 0 {
				var tools []map[string]any
				for _, td := range d.Tools {
					var params any
					if td.Parameters != nil {
						params = json.RawMessage(td.Parameters)
					}
					tools = append(tools, map[string]any{"name": td.Name, "description": td.Description, "parameters": params})
				}
				dc["tools"] = map[string]any{"functions": map[string]any{"name": "functions", "description": nil, "tools": tools}}
			}
			cs = append(cs, dc)
		}
		for _, p := range m.Parts {
			cs = append(cs, content{"type": "text", "text": p})
		}
		if cs == nil {
			cs = []content{}
		}
		o["content"] = cs
		out = append(out, o)
	}
	raw, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
