package stream_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stitchllm/stitch/render/bpe"
	"github.com/stitchllm/stitch/render/harmony"
	"github.com/stitchllm/stitch/stream"
)

// harmonyTokens are o200k_harmony's special token ids as render/harmony declares them (package
// family binds the same).
var harmonyTokens = stream.HarmonyTokens{EndOfText: harmony.TokenEndOfText, Return: harmony.TokenReturn,
	Constrain: harmony.TokenConstrain, Channel: harmony.TokenChannel, Start: harmony.TokenStart, End: harmony.TokenEnd,
	Message: harmony.TokenMessage, Call: harmony.TokenCall}

// gptoss loads the real gpt-oss tokenizer (o200k_harmony) once per test binary.
var gptoss = sync.OnceValues(func() (*bpe.Tokenizer, error) {
	_, file, _, _ := runtime.Caller(0)
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "testdata", "models", "gptoss", "tokenizer.json.gz"))
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	return bpe.Load(b)
})

func gptossTok(t testing.TB) *bpe.Tokenizer {
	t.Helper()
	tok, err := gptoss()
	if err != nil {
		t.Fatalf("load gpt-oss tokenizer: %v", err)
	}
	return tok
}

// item is one output item as the pieces describe it.
type item struct {
	Kind       string // reasoning, text, call
	Text       string // the concatenated deltas (arguments for a call)
	Name       string
	Start, End int
	Incomplete bool
}

// harmonyItems folds pieces into items, checking that deltas and their Done agree in kind.
func harmonyItems(t *testing.T, pieces []stream.Piece) []item {
	t.Helper()
	var out []item
	var cur *item
	open := func(kind string) *item {
		if cur == nil || cur.Kind != kind || cur.End != -1 {
			out = append(out, item{Kind: kind, End: -1})
			cur = &out[len(out)-1]
		}
		return cur
	}
	for _, p := range pieces {
		switch p.Kind {
		case stream.PieceReasoning:
			open("reasoning").Text += p.Text
		case stream.PieceText:
			open("text").Text += p.Text
		case stream.PieceToolCall:
			out = append(out, item{Kind: "call", Name: p.Text, End: -1})
			cur = &out[len(out)-1]
		case stream.PieceArguments:
			if cur == nil || cur.Kind != "call" || cur.End != -1 {
				t.Fatalf("arguments outside a call: %+v", pieces)
			}
			cur.Text += p.Text
		case stream.PieceReasoningDone, stream.PieceTextDone, stream.PieceToolCallDone:
			want := map[stream.PieceKind]string{stream.PieceReasoningDone: "reasoning", stream.PieceTextDone: "text", stream.PieceToolCallDone: "call"}[p.Kind]
			if cur == nil || cur.Kind != want || cur.End != -1 {
				t.Fatalf("%v without an open %s item: %+v", p.Kind, want, pieces)
			}
			cur.Start, cur.End, cur.Incomplete = p.Start, p.End, p.Incomplete
		}
	}
	return out
}

// parse feeds ids to a new HarmonyParser, then Finish.
func parse(t *testing.T, tok *bpe.Tokenizer, ids []uint32, opts stream.HarmonyOptions) ([]item, *stream.HarmonyParser) {
	t.Helper()
	p := stream.NewHarmonyParser(tok.NewDecodeStream(), opts)
	var pieces []stream.Piece
	for _, id := range ids {
		pieces = p.Append(pieces, id)
	}
	pieces = p.Finish(pieces)
	return harmonyItems(t, pieces), p
}

func TestHarmonyParser(t *testing.T) {
	tok := gptossTok(t)
	n := func(s string) int { return len(tok.Encode(s)) }
	final := "<|channel|>final<|message|>Hello, world!<|return|>"
	analysisFinal := "<|channel|>analysis<|message|>User greets. Reply.<|end|><|start|>assistant<|channel|>final<|message|>Hi there 👋<|return|>"
	preambleCall := "<|channel|>commentary<|message|>Checking the weather.<|end|>" +
		"<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"location\":\"Paris\"}<|call|>"
	tests := []struct {
		name      string
		out       string
		opts      stream.HarmonyOptions
		want      []item
		malformed bool
	}{
		{"final", final, stream.HarmonyOptions{Tokens: harmonyTokens}, []item{{Kind: "text", Text: "Hello, world!", Start: 0, End: n(final)}}, false},
		{"analysis then final", analysisFinal, stream.HarmonyOptions{Tokens: harmonyTokens}, []item{
			{Kind: "reasoning", Text: "User greets. Reply.", Start: 0, End: n("<|channel|>analysis<|message|>User greets. Reply.<|end|>")},
			{Kind: "text", Text: "Hi there 👋", Start: n("<|channel|>analysis<|message|>User greets. Reply.<|end|>"), End: n(analysisFinal)},
		}, false},
		{"preamble then call", preambleCall, stream.HarmonyOptions{Tokens: harmonyTokens}, []item{
			{Kind: "text", Text: "Checking the weather.", End: n("<|channel|>commentary<|message|>Checking the weather.<|end|>")},
			{Kind: "call", Name: "get_weather", Text: `{"location":"Paris"}`, Start: n("<|channel|>commentary<|message|>Checking the weather.<|end|>"), End: n(preambleCall)},
		}, false},
		{"recipient before channel, json", " to=functions.f<|channel|>commentary json<|message|> {\"a\": [1, {\"b\": null}]}\n<|call|>", stream.HarmonyOptions{Tokens: harmonyTokens}, []item{
			{Kind: "call", Name: "f", Text: " {\"a\": [1, {\"b\": null}]}\n", End: n(" to=functions.f<|channel|>commentary json<|message|> {\"a\": [1, {\"b\": null}]}\n<|call|>")},
		}, false},
		{"constrain adjacent to recipient", "<|channel|>commentary to=functions.g<|constrain|>json<|message|>{}<|call|>", stream.HarmonyOptions{Tokens: harmonyTokens}, []item{
			{Kind: "call", Name: "g", Text: "{}", End: n("<|channel|>commentary to=functions.g<|constrain|>json<|message|>{}<|call|>")},
		}, false},
		{"built-in recipient", "<|channel|>analysis to=browser.search code<|message|>{\"query\":\"x\"}<|call|>", stream.HarmonyOptions{Tokens: harmonyTokens}, []item{
			{Kind: "call", Name: "browser.search", Text: `{"query":"x"}`, End: n("<|channel|>analysis to=browser.search code<|message|>{\"query\":\"x\"}<|call|>")},
		}, false},
		{"invalid arguments", "<|channel|>commentary to=functions.f json<|message|>{\"a\": tru}<|call|>", stream.HarmonyOptions{Tokens: harmonyTokens}, []item{
			{Kind: "call", Name: "f", Text: `{"a": tru}`, End: n("<|channel|>commentary to=functions.f json<|message|>{\"a\": tru}<|call|>"), Incomplete: true},
		}, false},
		{"arguments not an object", "<|channel|>commentary to=functions.f json<|message|>[1]<|call|>", stream.HarmonyOptions{Tokens: harmonyTokens}, []item{
			{Kind: "call", Name: "f", Text: `[1]`, End: n("<|channel|>commentary to=functions.f json<|message|>[1]<|call|>"), Incomplete: true},
		}, false},
		{"trailing junk after arguments", "<|channel|>commentary to=functions.f json<|message|>{} x<|call|>", stream.HarmonyOptions{Tokens: harmonyTokens}, []item{
			{Kind: "call", Name: "f", Text: `{} x`, End: n("<|channel|>commentary to=functions.f json<|message|>{} x<|call|>"), Incomplete: true},
		}, false},
		{"call cut off", "<|channel|>commentary to=functions.f json<|message|>{\"a\": 1}", stream.HarmonyOptions{Tokens: harmonyTokens}, []item{
			{Kind: "call", Name: "f", Text: `{"a": 1}`, End: n("<|channel|>commentary to=functions.f json<|message|>{\"a\": 1}"), Incomplete: true},
		}, false},
		{"text cut off", "<|channel|>final<|message|>Partial answ", stream.HarmonyOptions{Tokens: harmonyTokens}, []item{
			{Kind: "text", Text: "Partial answ", End: n("<|channel|>final<|message|>Partial answ")},
		}, false},
		{"no channel is text", "<|message|>plain<|return|>", stream.HarmonyOptions{Tokens: harmonyTokens}, []item{{Kind: "text", Text: "plain", End: n("<|message|>plain<|return|>")}}, false},
		{"empty final makes no item", "<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>final<|message|><|return|>", stream.HarmonyOptions{Tokens: harmonyTokens}, []item{
			{Kind: "reasoning", Text: "think", End: n("<|channel|>analysis<|message|>think<|end|>")},
		}, false},
		{"end of text ends the turn", "<|channel|>final<|message|>ok<|endoftext|><|start|>assistant", stream.HarmonyOptions{Tokens: harmonyTokens}, []item{{Kind: "text", Text: "ok", End: n("<|channel|>final<|message|>ok<|endoftext|>")}}, false},
		{"extra stop id", "<|channel|>final<|message|>ok<|endofprompt|>more", stream.HarmonyOptions{Tokens: harmonyTokens, EndOfTurn: []uint32{200018}}, []item{{Kind: "text", Text: "ok", End: n("<|channel|>final<|message|>ok<|endofprompt|>")}}, false},
		{"ids after the stop are ignored", final + "<|start|>assistant<|channel|>final<|message|>again<|return|>", stream.HarmonyOptions{Tokens: harmonyTokens}, []item{{Kind: "text", Text: "Hello, world!", End: n(final)}}, false},
		{"junk between messages", "<|channel|>final<|message|>Hi<|end|>junk", stream.HarmonyOptions{Tokens: harmonyTokens}, []item{{Kind: "text", Text: "Hi", End: n("<|channel|>final<|message|>Hi<|end|>")}}, true},
		{"empty channel", "<|channel|><|message|>x<|return|>", stream.HarmonyOptions{Tokens: harmonyTokens}, nil, true},
		{"stop inside a header", "<|channel|>final<|end|>", stream.HarmonyOptions{Tokens: harmonyTokens}, nil, true},
		{"later message from another role", "<|channel|>final<|message|>a<|end|><|start|>user<|message|>b<|end|>", stream.HarmonyOptions{Tokens: harmonyTokens}, []item{{Kind: "text", Text: "a", End: n("<|channel|>final<|message|>a<|end|>")}}, true},
		{"leftover header words", "<|channel|>commentary to=functions.f json extra<|message|>{}<|call|>", stream.HarmonyOptions{Tokens: harmonyTokens}, nil, true},
		{"header too long", "<|channel|>final " + strings.Repeat("x ", 600) + "<|message|>y<|return|>", stream.HarmonyOptions{Tokens: harmonyTokens}, nil, true},
		{"typed markers in text stay text", "<|channel|>final<|message|>say &lt;|end|&gt;<|return|>", stream.HarmonyOptions{Tokens: harmonyTokens}, []item{{Kind: "text", Text: "say &lt;|end|&gt;", End: n("<|channel|>final<|message|>say &lt;|end|&gt;<|return|>")}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, p := parse(t, tok, tok.Encode(tt.out), tt.opts)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
			if p.Malformed() != tt.malformed {
				t.Errorf("Malformed() = %v, want %v", p.Malformed(), tt.malformed)
			}
			if !p.Ended() {
				t.Error("not Ended after Finish")
			}
		})
	}
}

// TestHarmonyParserVectors parses openai/harmony's own parser vectors (testdata/harmony/vectors,
// src/tests.rs at v0.0.8).
func TestHarmonyParserVectors(t *testing.T) {
	tok := gptossTok(t)
	read := func(name string) string {
		raw, err := os.ReadFile(filepath.Join("..", "testdata", "harmony", "vectors", name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(raw))
	}
	t.Run("test_simple_reasoning_response", func(t *testing.T) {
		var ids []uint32
		for _, f := range strings.Fields(read("test_simple_reasoning_response.txt")) {
			id, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			// harmony's parser ends a message at any of its stop ids and reads on; the
			// vector ends the analysis with <|return|>, which for vLLM ends the turn, so
			// it is read here as the <|end|> that continues it.
			if id == harmony.TokenReturn {
				id = harmony.TokenEnd
			}
			ids = append(ids, uint32(id))
		}
		got, _ := parse(t, tok, ids, stream.HarmonyOptions{Tokens: harmonyTokens})
		want := []string{`reasoning:User asks: "What is 2 + 2?" Simple arithmetic. Provide answer.`, "text:2 + 2 = 4."}
		if diff := cmp.Diff(want, summary(got)); diff != "" {
			t.Error(diff)
		}
	})
	t.Run("test_simple_tool_call", func(t *testing.T) {
		ids := []uint32{200005, 35644, 200008, 1844, 31064, 25, 392, 4827, 382, 290, 11122, 306, 40510, 16842,
			1416, 1309, 316, 1199, 37342, 170154, 4584, 13, 200007, 200006, 173781, 200005, 35644, 316,
			28, 29712, 170154, 3490, 200008, 10848, 7693, 1243, 392, 173844, 18583}
		got, _ := parse(t, tok, ids, stream.HarmonyOptions{Tokens: harmonyTokens})
		want := []string{`reasoning:User asks: "What is the weather in Tokyo?" We need to use lookup_weather tool.`, `call lookup_weather (incomplete):{"location": "Tokyo"}`}
		if diff := cmp.Diff(want, summary(got)); diff != "" {
			t.Error(diff)
		}
	})
	t.Run("test_streamable_parser", func(t *testing.T) {
		text := read("test_streamable_parser.txt")
		text = text[:strings.Index(text, "<|call|>")+len("<|call|>")]
		got, p := parse(t, tok, tok.Encode(text), stream.HarmonyOptions{Tokens: harmonyTokens})
		if len(got) != 2 || got[0].Kind != "reasoning" || got[1].Name != "browser.search" || got[1].Incomplete || p.Malformed() {
			t.Errorf("got %+v", got)
		}
		if want := `{"query": "current US president July 2025", "topn": 10, "source": "news"}`; got[1].Text != want {
			t.Errorf("arguments %q, want %q", got[1].Text, want)
		}
	})
}

func summary(items []item) []string {
	var out []string
	for _, it := range items {
		s := it.Kind
		if it.Kind == "call" {
			s += " " + it.Name
			if it.Incomplete {
				s += " (incomplete)"
			}
		}
		out = append(out, s+":"+it.Text)
	}
	return out
}

// TestHarmonyParserSplitUTF8 feeds a character whose bytes span tokens: the deltas still join
// to the exact text, and no U+FFFD appears.
func TestHarmonyParserSplitUTF8(t *testing.T) {
	tok := gptossTok(t)
	text := "暴風雨 𝔘𝔫𝔦 👨‍👩‍👧 ǅ"
	ids := append(tok.Encode("<|channel|>final<|message|>"), tok.Encode(text)...)
	ids = append(ids, harmony.TokenReturn)
	got, _ := parse(t, tok, ids, stream.HarmonyOptions{Tokens: harmonyTokens})
	if len(got) != 1 || got[0].Text != text {
		t.Fatalf("got %+v, want the text %q", got, text)
	}
}

// FuzzHarmonyParser feeds arbitrary id sequences drawn from markers and text tokens: the parser
// never panics, pieces stay well nested, ranges stay within the ids, and nothing follows Ended.
func FuzzHarmonyParser(f *testing.F) {
	f.Add([]byte("\x05\x10\x08\x20\x21\x07\x06\x30\x05\x11\x08\x22\x02"))
	f.Add([]byte("\x05\x12\x13\x03\x14\x08\x40\x41\x0c"))
	tok := gptossTok(f)
	markers := []uint32{harmony.TokenEndOfText, harmony.TokenReturn, harmony.TokenConstrain, 200004, harmony.TokenChannel, harmony.TokenStart, harmony.TokenEnd, harmony.TokenMessage}
	words := tok.Encode(" analysis final commentary to=functions.get_weather json assistant user {\"a\": [1, true]} } ] \" 👋 日本 <|end|> \n")
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return
		}
		p := stream.NewHarmonyParser(tok.NewDecodeStream(), stream.HarmonyOptions{Tokens: harmonyTokens})
		var pieces []stream.Piece
		ended := -1
		for i, b := range data {
			var id uint32
			switch {
			case b < 16:
				id = markers[int(b)%len(markers)]
				if b == 12 {
					id = harmony.TokenCall
				}
			case b < 24:
				id = uint32(b) * 7919 % 199998
			default:
				id = words[int(b)%len(words)]
			}
			before := len(pieces)
			pieces = p.Append(pieces, id)
			if ended >= 0 && len(pieces) != before {
				t.Fatalf("pieces after Ended at %d", ended)
			}
			if p.Ended() && ended < 0 {
				ended = i
			}
		}
		pieces = p.Finish(pieces)
		if !p.Ended() {
			t.Fatal("not Ended after Finish")
		}
		open := false
		for _, pc := range pieces {
			switch pc.Kind {
			case stream.PieceReasoning, stream.PieceText, stream.PieceArguments:
				open = true
			case stream.PieceToolCall:
				open = true
			default:
				if pc.Start < 0 || pc.End < pc.Start || pc.End > len(data) {
					t.Fatalf("bad range %d..%d of %d ids", pc.Start, pc.End, len(data))
				}
				open = false
			}
		}
		if open {
			t.Fatalf("an item is left open: %+v", pieces)
		}
	})
}

// TestHarmonyEmitter runs a typical gpt-oss tool turn (analysis, preamble, call) through the
// Emitter: three items in order, the call's arguments exactly as written.
func TestHarmonyEmitter(t *testing.T) {
	tok := gptossTok(t)
	out := "<|channel|>analysis<|message|>Need weather.<|end|>" +
		"<|start|>assistant<|channel|>commentary<|message|>Checking.<|end|>" +
		"<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"location\": \"Paris\"}<|call|>"
	p := stream.NewHarmonyParser(tok.NewDecodeStream(), stream.HarmonyOptions{Tokens: harmonyTokens})
	e := stream.NewEmitter(stream.EmitterOptions{Response: stream.Response{Model: "gpt-oss"}, NewID: counterIDs(), Now: fixedNow})
	events := e.Start(nil)
	var pieces []stream.Piece
	for _, id := range tok.Encode(out) {
		pieces = p.Append(pieces[:0], id)
		events = e.Apply(events, pieces...)
	}
	events = e.Complete(events, stream.FinishStop, nil, p.Finish(nil)...)
	r := e.Response()
	var got []string
	for i := range r.Output {
		it := &r.Output[i]
		got = append(got, it.Type+"|"+it.Status+"|"+it.Name+"|"+it.Arguments+"|"+it.Text())
	}
	want := []string{"reasoning|completed|||Need weather.", "message|completed|||Checking.", `function_call|completed|get_weather|{"location": "Paris"}|`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("output items (-want +got):\n%s", diff)
	}
	if r.Status != stream.StatusCompleted || len(events) == 0 {
		t.Errorf("status %s after %d events", r.Status, len(events))
	}
}

// TestHarmonyRoundTrip renders assistant turns with render/harmony and parses them back: the
// parser recovers every message the renderer wrote (what exact mode relies on when it replays
// the model's own tokens).
func TestHarmonyRoundTrip(t *testing.T) {
	tok := gptossTok(t)
	enc, err := harmony.NewEncoder(tok)
	if err != nil {
		t.Fatal(err)
	}
	turns := [][]harmony.Message{
		{{Role: harmony.RoleAssistant, Channel: "analysis", Parts: []string{"Think\n\n  twice 👀"}}, {Role: harmony.RoleAssistant, Channel: "final", Parts: []string{"Answer: 42.\n"}}},
		{{Role: harmony.RoleAssistant, Channel: "commentary", Parts: []string{"Let me look."}}, {Role: harmony.RoleAssistant, Channel: "commentary", Recipient: "functions.lookup", ContentType: "<|constrain|>json", Parts: []string{`{"q": "日本", "n": [1, 2.5e3]}`}}},
		{{Role: harmony.RoleAssistant, Channel: "analysis", Parts: []string{"call"}}, {Role: harmony.RoleAssistant, Channel: "commentary", Recipient: "functions.f", ContentType: "json", Parts: []string{"{}"}}},
	}
	for i, msgs := range turns {
		p, err := enc.RenderConversation(msgs, harmony.RenderOptions{KeepAnalysis: true})
		if err != nil {
			t.Fatal(err)
		}
		ids := p.IDs[2:] // the prompt ends in <|start|>assistant
		if last := len(ids) - 1; ids[last] == harmony.TokenEnd {
			ids[last] = harmony.TokenReturn
		}
		got, parser := parse(t, tok, ids, stream.HarmonyOptions{Tokens: harmonyTokens})
		var want []string
		for _, m := range msgs {
			switch {
			case m.Recipient != "":
				want = append(want, "call "+strings.TrimPrefix(m.Recipient, "functions.")+":"+m.Parts[0])
			case m.Channel == "analysis":
				want = append(want, "reasoning:"+m.Parts[0])
			default:
				want = append(want, "text:"+m.Parts[0])
			}
		}
		if diff := cmp.Diff(want, summary(got)); diff != "" || parser.Malformed() {
			t.Errorf("turn %d (malformed %v):\n%s", i, parser.Malformed(), diff)
		}
	}
}
