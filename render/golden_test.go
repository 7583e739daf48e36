package render

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/tidwall/gjson"
)

// The golden suite (testdata/render, regenerated as its README says) holds chat requests, the
// prompt text Python Jinja2 renders for them after vLLM's preprocessing, and the ids the Rust
// tokenizers give that text.

var goldenDir = filepath.Join("..", "testdata", "render")

var (
	qwenOnce  sync.Once
	qwenModel *Renderer
	qwenErr   error
)

// qwen3 loads testdata/models/qwen3 once per test binary (the tokenizer takes ~1 s to load).
func qwen3(t testing.TB) *Renderer {
	t.Helper()
	qwenOnce.Do(func() {
		qwenModel, qwenErr = LoadModel(os.DirFS(filepath.Join("..", "testdata", "models", "qwen3")), Options{})
	})
	if qwenErr != nil {
		t.Fatalf("LoadModel(qwen3): %v", qwenErr)
	}
	return qwenModel
}

type goldenCase struct {
	name string
	line []byte // the request exactly as Python wrote it
	text string
	err  string
	ids  []uint32
}

func readJSONL(t testing.TB, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if len(sc.Bytes()) > 0 {
			out = append(out, slices.Clone(sc.Bytes()))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func readJSONLIf(t testing.TB, path string) [][]byte {
	if path == "" {
		return nil
	}
	return readJSONL(t, path)
}

// loadGolden returns the chat cases with the expected results of one template ("qwen3",
// "qwen3-8b").
func loadGolden(t testing.TB, template string) []goldenCase {
	t.Helper()
	return loadGoldenFiles(t, "cases.jsonl", template)
}

// loadGoldenFiles pairs a cases file with the NAME.text.jsonl and NAME.ids.jsonl results.
func loadGoldenFiles(t testing.TB, casesFile, template string) []goldenCase {
	t.Helper()
	cases := readJSONL(t, filepath.Join(goldenDir, casesFile))
	texts := readJSONL(t, filepath.Join(goldenDir, template+".text.jsonl"))
	ids := map[string][]uint32{}
	idsFile := filepath.Join(goldenDir, template+".ids.jsonl")
	if _, err := os.Stat(idsFile); err != nil {
		idsFile = "" // a family without a tokenizer offline has text goldens only
	}
	for _, l := range readJSONLIf(t, idsFile) {
		var v struct {
			Name string
			IDs  []uint32
		}
		if err := json.Unmarshal(l, &v); err != nil {
			t.Fatal(err)
		}
		ids[v.Name] = v.IDs
	}
	if len(cases) != len(texts) {
		t.Fatalf("%d cases but %d %s texts: regenerate testdata/render", len(cases), len(texts), template)
	}
	out := make([]goldenCase, len(cases))
	for i, l := range cases {
		var v struct{ Name, Text, Error string }
		if err := json.Unmarshal(texts[i], &v); err != nil {
			t.Fatal(err)
		}
		name := gjson.GetBytes(l, "name").Str
		if name != v.Name {
			t.Fatalf("case %d is %q but text line is %q: regenerate testdata/render", i, name, v.Name)
		}
		out[i] = goldenCase{name: name, line: l, text: v.Text, err: v.Error, ids: ids[name]}
	}
	return out
}

// requestFromLine reads one `stitch render` / golden-case line.
func requestFromLine(line []byte) (ChatRequest, error) {
	return ParseChatRequest(line)
}

func TestGoldenTokenization(t *testing.T) {
	m := qwen3(t)
	for _, c := range loadGolden(t, "qwen3") {
		if c.err != "" {
			continue
		}
		// Encode itself is checked by TestGoldenRender (Render = RenderText + Encode).
		enc := m.EncodeWithBoundaries(c.text)
		if !slices.Equal(enc.IDs, c.ids) {
			t.Errorf("%s: EncodeWithBoundaries ids differ from the Rust oracle", c.name)
		}
	}
}

func TestGoldenRender(t *testing.T) {
	m := qwen3(t)
	src, err := os.ReadFile(filepath.Join(goldenDir, "templates", "qwen3-8b.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	m8b, err := m.WithTemplate(string(src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		template string
		model    *Renderer
	}{{"qwen3", m}, {"qwen3-8b", m8b}} {
		t.Run(tc.template, func(t *testing.T) {
			failures := 0
			for _, c := range loadGolden(t, tc.template) {
				req, err := requestFromLine(c.line)
				if err != nil {
					t.Errorf("%s: parse request: %v", c.name, err)
					continue
				}
				text, ids, err := tc.model.Render(req)
				switch {
				case c.err != "":
					if err == nil {
						t.Errorf("%s: Render succeeded, want error like %q", c.name, c.err)
					}
					continue
				case err != nil:
					t.Errorf("%s: Render: %v", c.name, err)
				case text != c.text:
					t.Errorf("%s: text differs:\n got: %q\nwant: %q", c.name, text, c.text)
				case !slices.Equal(ids, c.ids):
					t.Errorf("%s: ids differ", c.name)
				default:
					continue
				}
				if failures++; failures > 10 {
					t.Fatal("too many failures")
				}
			}
		})
	}
}

// TestGoldenResponses renders Responses requests (responses_cases.jsonl) through FromResponses and
// compares with the oracle, which maps items to messages with its own Python implementation.
func TestGoldenResponses(t *testing.T) {
	m := qwen3(t)
	src, err := os.ReadFile(filepath.Join(goldenDir, "templates", "qwen3-8b.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	m8b, err := m.WithTemplate(string(src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		template string
		model    *Renderer
	}{{"responses-qwen3", m}, {"responses-qwen3-8b", m8b}} {
		t.Run(tc.template, func(t *testing.T) {
			for _, c := range loadGoldenFiles(t, "responses_cases.jsonl", tc.template) {
				req, err := responsesRequest(c.line)
				if err != nil {
					t.Errorf("%s: FromResponses: %v", c.name, err)
					continue
				}
				text, ids, err := tc.model.Render(req)
				switch {
				case err != nil:
					t.Errorf("%s: Render: %v", c.name, err)
				case text != c.text:
					t.Errorf("%s: text differs:\n got: %q\nwant: %q", c.name, text, c.text)
				case !slices.Equal(ids, c.ids):
					t.Errorf("%s: ids differ", c.name)
				}
			}
		})
	}
}

// responsesRequest maps one responses_cases.jsonl line to the chat request the renderer gets.
func responsesRequest(raw []byte) (ChatRequest, error) {
	line := gjson.ParseBytes(raw)
	var items []json.RawMessage
	for _, it := range line.Get("input").Array() {
		items = append(items, json.RawMessage(it.Raw))
	}
	in := ResponsesInput{Instructions: line.Get("instructions").Str, Items: items}
	if tools := line.Get("tools"); tools.Exists() {
		in.Tools = json.RawMessage(tools.Raw)
	}
	conv, err := FromResponses(in)
	if err != nil {
		return ChatRequest{}, err
	}
	req := ChatRequest{Messages: conv.Messages, Tools: conv.Tools, AddGenerationPrompt: true}
	if kw := line.Get("chat_template_kwargs"); kw.Exists() {
		req.ChatTemplateKwargs = json.RawMessage(kw.Raw)
	}
	return req, nil
}

// FuzzRenderRequest: any parsable chat request renders or fails with an error, never panics, and
// the certified suffix from any earlier text still equals a full encode.
func FuzzRenderRequest(f *testing.F) {
	for _, l := range readJSONL(f, filepath.Join(goldenDir, "cases.jsonl"))[:12] {
		f.Add(l)
	}
	f.Add([]byte(`{"messages":[{"role":"weird","content":"x"},{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"[1e999,\"\\ud800\"]"}}]}]}`))
	m := qwen3(f)
	f.Fuzz(func(t *testing.T, line []byte) {
		req, err := ParseChatRequest(line)
		if err != nil {
			return
		}
		text, err := m.RenderText(req)
		if err != nil {
			return
		}
		half := m.EncodeWithBoundaries(text[:len(text)/2])
		if got, _ := m.Extend(half, text); !slices.Equal(got.IDs, m.Encode(text)) {
			t.Fatalf("Extend differs from Encode for %q", text)
		}
	})
}
