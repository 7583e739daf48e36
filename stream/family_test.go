package stream_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/stitchllm/stitch/render/bpe"
	"github.com/stitchllm/stitch/stream"
)

// models loads testdata/models/NAME/tokenizer.json(.gz) once per test binary.
var models = struct {
	sync.Mutex
	m map[string]*bpe.Tokenizer
}{m: map[string]*bpe.Tokenizer{}}

func model(t testing.TB, name string) *bpe.Tokenizer {
	t.Helper()
	models.Lock()
	defer models.Unlock()
	if tok, ok := models.m[name]; ok {
		return tok
	}
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "testdata", "models", name)
	b, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		gz, gerr := os.ReadFile(filepath.Join(dir, "tokenizer.json.gz"))
		if gerr != nil {
			t.Fatalf("load %s tokenizer: %v", name, gerr)
		}
		zr, zerr := gzip.NewReader(bytes.NewReader(gz))
		if zerr != nil {
			t.Fatalf("gunzip %s: %v", name, zerr)
		}
		if b, err = io.ReadAll(zr); err != nil {
			t.Fatalf("gunzip %s: %v", name, err)
		}
	}
	tok, err := bpe.Load(b)
	if err != nil {
		t.Fatalf("load %s tokenizer: %v", name, err)
	}
	models.m[name] = tok
	return tok
}

// markerBytes is a synthetic tokenizer: each listed marker string is one id
// (1000+i), every other byte its own id.
type markerBytes struct {
	markers []string // longest first
	ids     map[string]uint32
}

func newMarkerBytes(markers ...string) *markerBytes {
	mb := &markerBytes{ids: map[string]uint32{}}
	for i, m := range markers {
		if _, ok := mb.ids[m]; !ok {
			mb.ids[m] = uint32(1000 + i)
			mb.markers = append(mb.markers, m)
		}
	}
	sort.Slice(mb.markers, func(i, j int) bool { return len(mb.markers[i]) > len(mb.markers[j]) })
	return mb
}

func (mb *markerBytes) TokenID(s string) (uint32, bool) { id, ok := mb.ids[s]; return id, ok }

func (mb *markerBytes) encode(s string) []uint32 {
	var ids []uint32
outer:
	for len(s) > 0 {
		for _, m := range mb.markers {
			if strings.HasPrefix(s, m) {
				ids = append(ids, mb.ids[m])
				s = s[len(m):]
				continue outer
			}
		}
		ids = append(ids, uint32(s[0]))
		s = s[1:]
	}
	return ids
}

type markerBytesDecoder struct {
	mb   *markerBytes
	held byteDecoder
}

func (d *markerBytesDecoder) Next(id uint32) string {
	if id > 255 {
		for m, mid := range d.mb.ids {
			if mid == id {
				return d.held.Flush() + m
			}
		}
		return d.held.Flush()
	}
	return d.held.Next(id)
}

func (d *markerBytesDecoder) Flush() string { return d.held.Flush() }

// famTokenizer is one way to turn a test output into ids.
type famTokenizer struct {
	name   string
	lookup stream.TokenLookup
	encode func(string) []uint32
	dec    func() stream.TokenDecoder
}

func bpeTokenizer(t testing.TB, name string) famTokenizer {
	tok := model(t, name)
	return famTokenizer{name: name, lookup: tok, encode: tok.Encode, dec: func() stream.TokenDecoder { return tok.NewDecodeStream() }}
}

func bytesTokenizer(markers ...string) famTokenizer {
	mb := newMarkerBytes(markers...)
	return famTokenizer{name: "bytes", lookup: mb, encode: mb.encode, dec: func() stream.TokenDecoder { return &markerBytesDecoder{mb: mb} }}
}

type famCase struct {
	name      string
	output    string
	opts      func(*stream.FamilyOptions)
	want      []outItem
	malformed bool
	prefill   string // forced tool-call prefix the prompt ends with
}

type famSuite struct {
	tool, reasoning string
	endOfTurn       []string // end-of-turn token strings
	tools           string   // JSON array of ToolSchema-like {"name","parameters"}
	bpe             []string // real tokenizers to run under, besides bytes
	cases           []famCase
}

func (s famSuite) specs(t testing.TB) (*stream.ToolParserSpec, *stream.ReasoningParserSpec) {
	t.Helper()
	var tool *stream.ToolParserSpec
	var rs *stream.ReasoningParserSpec
	if s.tool != "" {
		tool = toolSpec(t, s.tool)
	}
	if s.reasoning != "" {
		rs = reasoningSpec(t, s.reasoning)
	}
	return tool, rs
}

func (s famSuite) markerStrings(t testing.TB) []string {
	tool, rs := s.specs(t)
	var out []string
	if tool != nil {
		for _, m := range tool.Markers {
			out = append(out, m.Token)
		}
	}
	if rs != nil {
		for _, m := range rs.Markers {
			out = append(out, m.Token)
		}
	}
	return append(out, s.endOfTurn...)
}

func (s famSuite) tokenizers(t testing.TB) []famTokenizer {
	tzs := []famTokenizer{bytesTokenizer(s.markerStrings(t)...)}
	for _, name := range s.bpe {
		tzs = append(tzs, bpeTokenizer(t, name))
	}
	return tzs
}

func (s famSuite) schemas(t testing.TB) []stream.ToolSchema {
	if s.tools == "" {
		return nil
	}
	var tools []struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal([]byte(s.tools), &tools); err != nil {
		t.Fatalf("tools: %v", err)
	}
	var out []stream.ToolSchema
	for _, tl := range tools {
		out = append(out, stream.ToolSchema{Name: tl.Name, Parameters: tl.Parameters})
	}
	return out
}

// newParser builds the suite's parser under tokenizer tz.
func (s famSuite) newParser(t testing.TB, tz famTokenizer, edit func(*stream.FamilyOptions)) *stream.FamilyParser {
	t.Helper()
	tool, rs := s.specs(t)
	ids, err := stream.ResolveMarkers(tz.lookup, tool, rs)
	if err != nil {
		t.Fatalf("resolve markers (%s): %v", tz.name, err)
	}
	opts := stream.FamilyOptions{Markers: ids, ParallelToolCalls: true, Tools: s.schemas(t)}
	for _, e := range s.endOfTurn {
		id, ok := tz.lookup.TokenID(e)
		if !ok {
			t.Fatalf("end of turn %q missing in %s", e, tz.name)
		}
		opts.EndOfTurn = append(opts.EndOfTurn, id)
	}
	if edit != nil {
		edit(&opts)
	}
	p, err := stream.NewFamilyParser(tz.dec(), tool, rs, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// collect runs ids through an OutputParser, one id at a time, and summarizes
// the pieces, checking the piece grammar and ranges on the way.
func collect(t *testing.T, p stream.OutputParser, ids []uint32) []outItem {
	t.Helper()
	var pieces []stream.Piece
	for _, id := range ids {
		pieces = p.Append(pieces, id)
	}
	pieces = p.Finish(pieces)
	for _, pc := range pieces {
		// One call id per call (issue 33): the id output_item.added carries (the
		// PieceToolCall's) is never replaced when the call ends.
		if pc.Kind == stream.PieceToolCallDone && pc.CallID != "" {
			t.Errorf("call id %q arrives only when the call ends: output_item.added carried another", pc.CallID)
		}
	}
	items, err := summarize(pieces, len(ids))
	if err != nil {
		t.Fatalf("%v\npieces: %+v", err, pieces)
	}
	return items
}

func (s famSuite) run(t *testing.T) {
	for _, tz := range s.tokenizers(t) {
		for _, tc := range s.cases {
			t.Run(tc.name+"/"+tz.name, func(t *testing.T) {
				p := s.newParser(t, tz, func(o *stream.FamilyOptions) {
					if tc.prefill != "" {
						o.Prefill = tz.encode(tc.prefill)
					}
					if tc.opts != nil {
						tc.opts(o)
					}
				})
				ids := tz.encode(tc.output)
				got := collect(t, p, ids)
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("parse %q (-want +got):\n%s", tc.output, diff)
				}
				if p.Malformed() != tc.malformed {
					t.Errorf("Malformed() = %v, want %v", p.Malformed(), tc.malformed)
				}
			})
		}
	}
}

func (s famSuite) fuzz(f *testing.F) {
	for _, tc := range s.cases {
		f.Add(tc.output, false, true)
	}
	markers := s.markerStrings(f)
	tz := bytesTokenizer(markers...)
	f.Fuzz(func(t *testing.T, output string, thinkingOpen, parallel bool) {
		// Bytes 0x01… stand for the markers, so mutations reach them.
		var b strings.Builder
		for i := 0; i < len(output); i++ {
			if c := int(output[i]); c >= 1 && c <= len(markers) {
				b.WriteString(markers[c-1])
				continue
			}
			b.WriteByte(output[i])
		}
		output = b.String()
		p := s.newParser(t, tz, func(o *stream.FamilyOptions) {
			o.ThinkingOpen = thinkingOpen
			o.ParallelToolCalls = parallel
		})
		items := collect(t, p, tz.encode(output))
		for _, it := range items {
			if !utf8.ValidString(it.Text) {
				t.Errorf("invalid UTF-8 in %+v", it)
			}
		}
	})
}

func incomplete(name, args string) outItem {
	return outItem{Kind: "call", Name: name, Text: args, Incomplete: true}
}

func callID(name, args, id string) outItem {
	return outItem{Kind: "call", Name: name, Text: args, CallID: id}
}

var hermesSuite = famSuite{
	tool: "hermes", reasoning: "qwen3", endOfTurn: []string{"<|im_end|>", "<|endoftext|>"}, bpe: []string{"qwen3"},
}

func TestFamilyHermesMalformed(t *testing.T) {
	tok := tokenizer(t)
	for _, tc := range []struct {
		output    string
		malformed bool
	}{
		{"<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1,,}}\n</tool_call><|im_end|>", true},
		{"<tool_call>\n{\"name\": \"f\", \"arguments\": {}} x\n</tool_call><|im_end|>", false},
		{"<tool_call>\n{\"name\": get}\n</tool_call><|im_end|>", false},
	} {
		p := mustQwen3Parser(t, tok, tok.NewDecodeStream(), nil)
		collect(t, p, tok.Encode(tc.output))
		if p.Malformed() != tc.malformed {
			t.Errorf("Malformed() after %q = %v, want %v", tc.output, p.Malformed(), tc.malformed)
		}
	}
}

// toolParsers and reasoningParsers are every parser spec stream implements (package family's
// registry names them by vLLM's names).
var (
	toolParsers = []func() *stream.ToolParserSpec{stream.HermesToolParser, stream.Qwen3CoderToolParser,
		stream.Llama3JSONToolParser, stream.PythonicToolParser, stream.MistralToolParser, stream.DeepSeekV3ToolParser,
		stream.DeepSeekV31ToolParser, stream.KimiK2ToolParser, stream.GLM45ToolParser, stream.GLM47ToolParser}
	reasoningParsers = []func() *stream.ReasoningParserSpec{stream.Qwen3ReasoningParser, stream.DeepSeekR1ReasoningParser,
		stream.DeepSeekV3ReasoningParser, stream.GLM45ReasoningParser, stream.KimiK2ReasoningParser, stream.MistralReasoningParser}
)

func toolSpec(t testing.TB, name string) *stream.ToolParserSpec {
	t.Helper()
	for _, f := range toolParsers {
		if s := f(); s.Name == name {
			return s
		}
	}
	t.Fatalf("no tool parser %q", name)
	return nil
}

func reasoningSpec(t testing.TB, name string) *stream.ReasoningParserSpec {
	t.Helper()
	for _, f := range reasoningParsers {
		if s := f(); s.Name == name {
			return s
		}
	}
	t.Fatalf("no reasoning parser %q", name)
	return nil
}

func TestParserSpecs(t *testing.T) {
	for i, want := range []string{"hermes", "qwen3_coder", "llama3_json", "pythonic", "mistral", "deepseek_v3", "deepseek_v31", "kimi_k2", "glm45", "glm47"} {
		s := toolParsers[i]()
		if s.Name != want {
			t.Errorf("tool parser %d is %q, want %q", i, s.Name, want)
		}
		if s.Forced.Required == "" || s.Forced.Named == nil || s.Forced.Named("f") == "" {
			t.Errorf("%s: no forced tool-call prefix", s.Name)
		}
	}
	for i, want := range []string{"qwen3", "deepseek_r1", "deepseek_v3", "glm45", "kimi_k2", "mistral"} {
		if s := reasoningParsers[i](); s.Name != want {
			t.Errorf("reasoning parser %d is %q, want %q", i, s.Name, want)
		}
	}
	_, err := stream.ResolveMarkers(model(t, "qwen3"), stream.DeepSeekV3ToolParser(), nil)
	if !errors.Is(err, stream.ErrMissingMarker) || !strings.Contains(err.Error(), "<｜tool▁calls▁begin｜>") {
		t.Errorf("ResolveMarkers(qwen3, deepseek_v3) error = %v", err)
	}
	ids, err := stream.ResolveMarkers(model(t, "mistral_nemo"), stream.MistralToolParser(), nil)
	if err != nil || len(ids) != 1 {
		t.Errorf("ResolveMarkers(mistral_nemo, mistral) = %v, %v (want only [TOOL_CALLS]; [ARGS] and [CALL_ID] are optional)", ids, err)
	}
}

func FuzzFamilyHermes(f *testing.F) {
	s := hermesSuite
	for _, tc := range parserCases {
		s.cases = append(s.cases, famCase{output: tc.output})
	}
	s.fuzz(f)
}

func FuzzFamilyDeepSeekR1(f *testing.F) { deepseekR1Suite.fuzz(f) }

// TestFamilyHermesQwen25 runs hermes without a reasoning parser on the
// Qwen2.5 tokenizer: <think> is plain text there.
func TestFamilyHermesQwen25(t *testing.T) {
	famSuite{tool: "hermes", endOfTurn: []string{"<|im_end|>"}, bpe: []string{"qwen2_5"}, cases: []famCase{
		{name: "think is text", output: "<think>x</think> y<|im_end|>", want: []outItem{text("<think>x</think> y")}},
		{name: "parallel", output: "Sure.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"q\": \"日本\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"g\", \"arguments\": {}}\n</tool_call><|im_end|>",
			want: []outItem{text("Sure."), call("f", `{"q": "日本"}`), call("g", `{}`)}},
		{name: "broken", output: "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"q\": tru}}\n</tool_call>ok<|im_end|>",
			want: []outItem{incomplete("f", `{"q": tru`), text("ok")}, malformed: true},
		{name: "forced named", prefill: "<tool_call>\n{\"name\": \"f\", \"arguments\": ", output: "{\"q\": 1}}\n</tool_call><|im_end|>",
			want: []outItem{call("f", `{"q": 1}`)}},
	}}.run(t)
}
