package stream_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/stitchllm/stitch/stream"
)

// byteMarkers is a synthetic tokenizer for the Qwen3 suite: each marker and
// end-of-turn string is one id (1000+), every other byte is its own id
// (0–255). It splits every multi-byte character, which real tokenizers rarely do.
var byteMarkers = map[string]uint32{
	"<think>":       1000,
	"</think>":      1001,
	"<tool_call>":   1002,
	"</tool_call>":  1003,
	"<|im_end|>":    1004,
	"<|endoftext|>": 1005,
	"<|im_start|>":  1006,
}

// byteLookup is byteMarkers as a stream.TokenLookup.
type byteLookup struct{}

func (byteLookup) TokenID(s string) (uint32, bool) { id, ok := byteMarkers[s]; return id, ok }

// qwen3Parser returns the Qwen3 family's output parser as package family builds it (vLLM's hermes
// tool parser with its qwen3 reasoning parser, ending at <|im_end|> and <|endoftext|>), with the
// marker ids of tok; edit adjusts the options (nil: parallel calls on, reasoning not open).
func qwen3Parser(tok stream.TokenLookup, dec stream.TokenDecoder, edit func(*stream.FamilyOptions)) (*stream.FamilyParser, error) {
	tool, rs := stream.HermesToolParser(), stream.Qwen3ReasoningParser()
	markers, err := stream.ResolveMarkers(tok, tool, rs)
	if err != nil {
		return nil, err
	}
	opts := stream.FamilyOptions{Markers: markers, ParallelToolCalls: true}
	for _, s := range []string{"<|im_end|>", "<|endoftext|>"} {
		if id, ok := tok.TokenID(s); ok {
			opts.EndOfTurn = append(opts.EndOfTurn, id)
		}
	}
	if edit != nil {
		edit(&opts)
	}
	return stream.NewFamilyParser(dec, tool, rs, opts)
}

func mustQwen3Parser(t testing.TB, tok stream.TokenLookup, dec stream.TokenDecoder, edit func(*stream.FamilyOptions)) *stream.FamilyParser {
	t.Helper()
	p, err := qwen3Parser(tok, dec, edit)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func byteEncode(s string) []uint32 {
	var ids []uint32
outer:
	for len(s) > 0 {
		if s[0] == '<' {
			for m, id := range byteMarkers {
				if strings.HasPrefix(s, m) {
					ids = append(ids, id)
					s = s[len(m):]
					continue outer
				}
			}
		}
		ids = append(ids, uint32(s[0]))
		s = s[1:]
	}
	return ids
}

// byteDecoder is the TokenDecoder of byteTokens: it holds bytes until they
// form whole UTF-8 characters, like a DecodeStream.
type byteDecoder struct{ held []byte }

func (d *byteDecoder) Next(id uint32) string {
	if id > 255 {
		for m, mid := range byteMarkers {
			if mid == id {
				return d.Flush() + m
			}
		}
		return d.Flush()
	}
	d.held = append(d.held, byte(id))
	// Emit the longest prefix that does not end inside a character.
	n := len(d.held)
	for i := max(0, n-3); i < n; i++ {
		if utf8.RuneStart(d.held[i]) && !utf8.FullRune(d.held[i:]) {
			n = i
			break
		}
	}
	out := strings.ToValidUTF8(string(d.held[:n]), "\uFFFD")
	d.held = append(d.held[:0], d.held[n:]...)
	return out
}

func (d *byteDecoder) Flush() string {
	if len(d.held) == 0 {
		return ""
	}
	out := strings.ToValidUTF8(string(d.held), "\uFFFD")
	d.held = d.held[:0]
	return out
}

// outItem is a tokenization-independent summary of one parsed item.
type outItem struct {
	Kind       string // "reasoning", "text", "call"
	Text       string // text, or arguments for a call
	Name       string
	Incomplete bool
	CallID     string
}

type pieceError string

func (e pieceError) Error() string { return string(e) }

// summarize folds pieces into items, reporting grammar violations: deltas
// outside their item, a new item before the previous one ended, bad or
// overlapping ranges.
func summarize(pieces []stream.Piece, n int) ([]outItem, error) {
	var items []outItem
	var cur *outItem
	lastEnd := 0
	begin := func(kind string) error {
		if cur != nil && cur.Kind != kind {
			return pieceError("a " + kind + " piece while a " + cur.Kind + " item is open")
		}
		if cur == nil {
			items = append(items, outItem{Kind: kind})
			cur = &items[len(items)-1]
		}
		return nil
	}
	for _, pc := range pieces {
		switch pc.Kind {
		case stream.PieceReasoning, stream.PieceText:
			kind := "text"
			if pc.Kind == stream.PieceReasoning {
				kind = "reasoning"
			}
			if err := begin(kind); err != nil {
				return nil, err
			}
			if pc.Text == "" {
				return nil, pieceError("empty delta")
			}
			cur.Text += pc.Text
		case stream.PieceToolCall:
			if cur != nil {
				return nil, pieceError("tool call while an item is open")
			}
			items = append(items, outItem{Kind: "call", Name: pc.Text, CallID: pc.CallID})
			cur = &items[len(items)-1]
		case stream.PieceArguments:
			if cur == nil || cur.Kind != "call" {
				return nil, pieceError("arguments outside a call")
			}
			cur.Text += pc.Text
		case stream.PieceReasoningDone, stream.PieceTextDone, stream.PieceToolCallDone:
			want := map[stream.PieceKind]string{stream.PieceReasoningDone: "reasoning", stream.PieceTextDone: "text", stream.PieceToolCallDone: "call"}[pc.Kind]
			if cur == nil || cur.Kind != want {
				return nil, pieceError(pc.Kind.String() + " without an open " + want)
			}
			if pc.Start < lastEnd || pc.End < pc.Start || pc.End > n {
				return nil, pieceError("bad range")
			}
			lastEnd = pc.End
			cur.Incomplete = pc.Incomplete
			if pc.CallID != "" {
				cur.CallID = pc.CallID
			}
			if cur.Kind == "call" && !pc.Incomplete && !json.Valid([]byte(cur.Text)) {
				return nil, pieceError("complete call with invalid arguments " + cur.Text)
			}
			cur = nil
		default:
			return nil, pieceError("unknown piece kind")
		}
	}
	if cur != nil {
		return nil, pieceError("item left open after Finish")
	}
	return items, nil
}

type parserCase struct {
	name   string
	opts   func(*stream.FamilyOptions)
	output string
	want   []outItem
}

func reasoning(s string) outItem { return outItem{Kind: "reasoning", Text: s} }
func text(s string) outItem      { return outItem{Kind: "text", Text: s} }
func call(name, args string) outItem {
	return outItem{Kind: "call", Name: name, Text: args}
}

var parserCases = []parserCase{
	{name: "empty", output: "<|im_end|>", want: nil},
	{name: "only newlines", output: "\n\n<|im_end|>", want: nil},
	{name: "plain", output: "Hello, world!<|im_end|>", want: []outItem{text("Hello, world!")}},
	{name: "no eos", output: "Hello", want: []outItem{text("Hello")}},
	{name: "trailing newline kept at end", output: "code:\n\tx := 1\n<|im_end|>", want: []outItem{text("code:\n\tx := 1\n")}},
	{name: "inner newlines kept", output: "a\n\nb<|im_end|>", want: []outItem{text("a\n\nb")}},
	{name: "reasoning and text", output: "<think>\nhmm\n\nyes\n</think>\n\nAnswer.<|im_end|>",
		want: []outItem{reasoning("hmm\n\nyes"), text("Answer.")}},
	{name: "newline before think", output: "\n<think>\nx\n</think>\n\ny<|im_end|>",
		want: []outItem{reasoning("x"), text("y")}},
	{name: "empty reasoning", output: "<think>\n\n</think>\n\nHello<|im_end|>", want: []outItem{text("Hello")}},
	{name: "think after text is text", output: "Hi <think>x</think><|im_end|>", want: []outItem{text("Hi <think>x</think>")}},
	{name: "thinking open", opts: func(o *stream.FamilyOptions) { o.ThinkingOpen = true },
		output: "pondering\n</think>\n\nDone<|im_end|>", want: []outItem{reasoning("pondering"), text("Done")}},
	{name: "thinking open never closed", opts: func(o *stream.FamilyOptions) { o.ThinkingOpen = true },
		output: "still thinking<|im_end|>", want: []outItem{reasoning("still thinking")}},
	{name: "tool call markers inside reasoning are reasoning", output: "<think>\nuse <tool_call> maybe\n</think>\n\nok<|im_end|>",
		want: []outItem{reasoning("use <tool_call> maybe"), text("ok")}},
	{name: "one call", output: "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call><|im_end|>",
		want: []outItem{call("f", `{"a": 1}`)}},
	{name: "compact call", output: `<tool_call>{"name":"f","arguments":{}}</tool_call><|im_end|>`,
		want: []outItem{call("f", `{}`)}},
	{name: "tricky argument strings", output: "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"a}b\\\"c{\", \"u\": \"\\u00e9é\", \"n\": [1.5e-3, -0, {\"x\": [[]]}]}}\n</tool_call><|im_end|>",
		want: []outItem{call("search", `{"q": "a}b\"c{", "u": "\u00e9é", "n": [1.5e-3, -0, {"x": [[]]}]}`)}},
	{name: "escaped name", output: "<tool_call>\n{\"name\": \"get\\u005fx\", \"arguments\": {}}\n</tool_call><|im_end|>",
		want: []outItem{call("get_x", `{}`)}},
	{name: "extra keys are ignored", output: "<tool_call>\n{\"id\": 7, \"name\": \"f\", \"arguments\": {\"a\": true}, \"meta\": [null]}\n</tool_call><|im_end|>",
		want: []outItem{call("f", `{"a": true}`)}},
	{name: "text then call", output: "Let me look.\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call><|im_end|>",
		want: []outItem{text("Let me look."), call("f", `{}`)}},
	{name: "text after call", output: "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\nDone.<|im_end|>",
		want: []outItem{call("f", `{}`), text("Done.")}},
	{name: "two calls", output: "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"g\", \"arguments\": {\"b\": 2}}\n</tool_call><|im_end|>",
		want: []outItem{call("f", `{}`), call("g", `{"b": 2}`)}},
	{name: "parallel off keeps first", opts: func(o *stream.FamilyOptions) { o.ParallelToolCalls = false },
		output: "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"g\", \"arguments\": {\"b\": 2}}\n</tool_call><|im_end|>",
		want:   []outItem{call("f", `{}`)}},
	{name: "parallel off malformed second is text", opts: func(o *stream.FamilyOptions) { o.ParallelToolCalls = false },
		output: "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\n<tool_call>\noops\n</tool_call><|im_end|>",
		want:   []outItem{call("f", `{}`), text("<tool_call>\noops\n</tool_call>")}},
	{name: "bad json is text", output: "Checking.\n<tool_call>\n{\"name\": get, \"arguments\": {}}\n</tool_call><|im_end|>",
		want: []outItem{text("Checking.\n<tool_call>\n{\"name\": get, \"arguments\": {}}\n</tool_call>")}},
	{name: "string arguments are text", output: "<tool_call>\n{\"name\": \"f\", \"arguments\": \"{}\"}\n</tool_call><|im_end|>",
		want: []outItem{text("<tool_call>\n{\"name\": \"f\", \"arguments\": \"{}\"}\n</tool_call>")}},
	{name: "empty name is text", output: "<tool_call>\n{\"name\": \"\", \"arguments\": {}}\n</tool_call><|im_end|>",
		want: []outItem{text("<tool_call>\n{\"name\": \"\", \"arguments\": {}}\n</tool_call>")}},
	{name: "missing arguments is text", output: "<tool_call>\n{\"name\": \"f\"}\n</tool_call><|im_end|>",
		want: []outItem{text("<tool_call>\n{\"name\": \"f\"}\n</tool_call>")}},
	{name: "duplicate name is text", output: "<tool_call>\n{\"name\": \"f\", \"name\": \"g\", \"arguments\": {}}\n</tool_call><|im_end|>",
		want: []outItem{text("<tool_call>\n{\"name\": \"f\", \"name\": \"g\", \"arguments\": {}}\n</tool_call>")}},
	{name: "unterminated before begin is text", output: "<tool_call>\n{\"name\": \"f\"<|im_end|>",
		want: []outItem{text("<tool_call>\n{\"name\": \"f\"")}},
	{name: "unterminated after begin is incomplete", output: "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1, 2",
		want: []outItem{{Kind: "call", Name: "f", Text: `{"a": [1, 2`, Incomplete: true}}},
	{name: "whole call without end marker", output: "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n<|im_end|>",
		want: []outItem{call("f", `{"a": 1}`)}},
	{name: "missing outer brace", output: "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}\n</tool_call><|im_end|>",
		want: []outItem{call("f", `{"a": 1}`)}},
	{name: "syntax error after begin", output: "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1,,}}\n</tool_call><|im_end|>",
		want: []outItem{{Kind: "call", Name: "f", Text: `{"a": 1,`, Incomplete: true}}},
	{name: "syntax error after begin then text", output: "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\" 1}}\n</tool_call>\nok<|im_end|>",
		want: []outItem{{Kind: "call", Name: "f", Text: `{"a" `, Incomplete: true}, text("ok")}},
	{name: "junk after whole call", output: "<tool_call>\n{\"name\": \"f\", \"arguments\": {}} x\n</tool_call><|im_end|>",
		want: []outItem{call("f", `{}`)}},
	{name: "nested tool_call restarts", output: "<tool_call>\n{\"name\": \"f\", <tool_call>\n{\"name\": \"g\", \"arguments\": {}}\n</tool_call><|im_end|>",
		want: []outItem{text("<tool_call>\n{\"name\": \"f\", "), call("g", `{}`)}},
	{name: "tool calls disabled", opts: func(o *stream.FamilyOptions) { o.DisableToolCalls = true },
		output: "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call><|im_end|>",
		want:   []outItem{text("<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>")}},
	{name: "stray end marker is text", output: "a</tool_call>b</think><|im_end|>", want: []outItem{text("a</tool_call>b</think>")}},
	{name: "ids after eos ignored", output: "a<|im_end|>b<tool_call>", want: []outItem{text("a")}},
	{name: "endoftext ends", output: "a<|endoftext|>b", want: []outItem{text("a")}},
	{name: "other special tokens are text", output: "a<|im_start|>b<|im_end|>", want: []outItem{text("a<|im_start|>b")}},
	{name: "multibyte", output: "<think>\n日本語 🦀\n</think>\n\n𠜎 é<|im_end|>", want: []outItem{reasoning("日本語 🦀"), text("𠜎 é")}},
}

// TestQwen3Suite runs every case through the Qwen3 family's parser under two
// tokenizations (real Qwen3 BPE ids and one id per byte): the items must not
// depend on how text is split.
func TestQwen3Suite(t *testing.T) {
	tok := tokenizer(t)
	tokenizations := []struct {
		name   string
		lookup stream.TokenLookup
		encode func(string) []uint32
		dec    func() stream.TokenDecoder
	}{
		{"qwen3", tok, func(s string) []uint32 { return tok.Encode(s) }, func() stream.TokenDecoder { return tok.NewDecodeStream() }},
		{"bytes", byteLookup{}, byteEncode, func() stream.TokenDecoder { return &byteDecoder{} }},
	}
	for _, tc := range parserCases {
		for _, tz := range tokenizations {
			t.Run(tc.name+"/"+tz.name, func(t *testing.T) {
				got := collect(t, mustQwen3Parser(t, tz.lookup, tz.dec(), tc.opts), tz.encode(tc.output))
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("parse %q (-want +got):\n%s", tc.output, diff)
				}
			})
		}
	}
	// An extra stop id (a request's stop_token_ids) ends the output like <|im_end|>.
	start, _ := tok.TokenID("<|im_start|>")
	p := mustQwen3Parser(t, tok, tok.NewDecodeStream(), func(o *stream.FamilyOptions) { o.EndOfTurn = append(o.EndOfTurn, start) })
	if got := collect(t, p, tok.Encode("a<|im_start|>b")); !cmp.Equal(got, []outItem{text("a")}) {
		t.Errorf("extra stop id: %v, want only text a", got)
	}
}

func FuzzQwen3(f *testing.F) {
	for _, tc := range parserCases {
		f.Add(tc.output, false, true)
	}
	f.Add("<think>\n\xff\xfe</think>", true, false)
	f.Fuzz(func(t *testing.T, output string, thinkingOpen, parallel bool) {
		p := mustQwen3Parser(t, byteLookup{}, &byteDecoder{}, func(o *stream.FamilyOptions) {
			o.ThinkingOpen, o.ParallelToolCalls = thinkingOpen, parallel
		})
		items := collect(t, p, byteEncode(output))
		for _, it := range items {
			if !utf8.ValidString(it.Text) {
				t.Errorf("invalid UTF-8 in %+v", it)
			}
		}
	})
}
