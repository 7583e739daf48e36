package bpe

import (
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Models are loaded at most once per test binary and shared by the tests (read-only).
var (
	qwenOnce, gptossOnce sync.Once
	qwenTok, gptossTok   *Tokenizer
	qwenErr, gptossErr   error
)

func readModel(t testing.TB, name string) []byte {
	t.Helper()
	dir := filepath.Join("..", "..", "testdata", "models", name)
	if data, err := os.ReadFile(filepath.Join(dir, "tokenizer.json")); err == nil {
		return data
	}
	f, err := os.Open(filepath.Join(dir, "tokenizer.json.gz"))
	if err != nil {
		t.Fatalf("open model %s: %v", name, err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("inflate model %s: %v", name, err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("inflate model %s: %v", name, err)
	}
	return data
}

func qwen(t testing.TB) *Tokenizer {
	t.Helper()
	qwenOnce.Do(func() { qwenTok, qwenErr = Load(readModel(t, "qwen3")) })
	if qwenErr != nil {
		t.Fatalf("Load(qwen3): %v", qwenErr)
	}
	return qwenTok
}

func gptoss(t testing.TB) *Tokenizer {
	t.Helper()
	gptossOnce.Do(func() { gptossTok, gptossErr = Load(readModel(t, "gptoss")) })
	if gptossErr != nil {
		t.Fatalf("Load(gptoss): %v", gptossErr)
	}
	return gptossTok
}

func TestEncodeQwen3(t *testing.T) {
	tok := qwen(t)
	// Reference ids from tools/oracle/tokenize.js (the Rust crate).
	tests := []struct {
		name string
		in   string
		want []uint32
	}{
		{"empty", "", []uint32{}},
		{"added token inside text", "Hello world! <|im_end|> héllo", []uint32{9707, 1879, 0, 220, 151645, 305, 18503, 385}},
		{"whitespace runs", "  a  \n\n b", []uint32{220, 264, 18611, 293}},
		{"think tags", "<think>\nok</think>", []uint32{151667, 198, 562, 151668}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tok.Encode(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Encode(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
			if dec := tok.Decode(got); dec != tt.in {
				t.Errorf("Decode(Encode(%q)) = %q", tt.in, dec)
			}
		})
	}
}

func TestSpecialIDs(t *testing.T) {
	tok := qwen(t)
	tests := []struct {
		token   string
		id      uint32
		special bool
	}{
		{"<|endoftext|>", 151643, true},
		{"<|im_start|>", 151644, true},
		{"<|im_end|>", 151645, true},
		{"<tool_call>", 151657, false},
		{"</tool_call>", 151658, false},
		{"<think>", 151667, false},
		{"</think>", 151668, false},
		{"Ġthe", 279, false},
	}
	for _, tt := range tests {
		id, ok := tok.TokenID(tt.token)
		if !ok || id != tt.id {
			t.Errorf("TokenID(%q) = %d, %v, want %d, true", tt.token, id, ok, tt.id)
		}
		if got := tok.IsSpecial(tt.id); got != tt.special {
			t.Errorf("IsSpecial(%d) = %v, want %v", tt.id, got, tt.special)
		}
		if got := tok.Encode(tt.token); len(got) != 1 || got[0] != tt.id {
			if !strings.HasPrefix(tt.token, "Ġ") {
				t.Errorf("Encode(%q) = %v, want [%d]", tt.token, got, tt.id)
			}
		}
	}
	if got, want := tok.VocabSize(), 151669; got != want {
		t.Errorf("VocabSize() = %d, want %d", got, want)
	}
}

func TestAddedTokenSpans(t *testing.T) {
	tok := qwen(t)
	text := "a<|im_start|>user\nhi<|im_end|><think></think><|im_end"
	want := []Span{{1, 13, 151644}, {20, 30, 151645}, {30, 37, 151667}, {37, 45, 151668}}
	if diff := cmp.Diff(want, tok.AddedTokenSpans(text)); diff != "" {
		t.Errorf("AddedTokenSpans(%q) mismatch (-want +got):\n%s", text, diff)
	}
}

func TestLoadRefuses(t *testing.T) {
	base := string(readModel(t, "qwen3"))
	tests := []struct {
		name, old, new string
		want           error
		mention        string
	}{
		{"byte fallback", `"byte_fallback": false`, `"byte_fallback": true`, ErrUnsupported, "byte_fallback"},
		{"lstrip", `"lstrip": false`, `"lstrip": true`, ErrUnsupported, "lstrip"},
		{"normalizer", `"normalizer": {
    "type": "NFC"
  }`, `"normalizer": {"type": "NFKC"}`, ErrUnsupported, "NFKC"},
		{"regex", `\\s+(?!\\S)|\\s+"`, `\\s+(?<!\\S)|\\s+"`, ErrUnsupported, "lookbehind"},
		{"decoder", `"decoder": {
    "type": "ByteLevel"`, `"decoder": {
    "type": "Metaspace"`, ErrUnsupported, "Metaspace"},
		{"not json", `{`, `[`, ErrInvalid, "object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := strings.Replace(base, tt.old, tt.new, 1)
			if in == base {
				t.Fatalf("test input unchanged: %q not found", tt.old)
			}
			_, err := Load([]byte(in))
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("Load() error = %v, want %v mentioning %q", err, tt.want, tt.mention)
			}
		})
	}
}

// TestMergePathsAgree checks the rescanning merge (short words) against the heap merge (long
// words) on the same words.
func TestMergePathsAgree(t *testing.T) {
	for _, tok := range []*Tokenizer{qwen(t), gptoss(t)} {
		var w merger
		words := []string{"hello", "   ", "aaaaaaaa", "\u4e2d\u6587\u5b57\u7b26\u4e2d\u6587", "!!!!!!!!", "abcabcabcabc",
			"Ġ", "internationalization", "0123456789", "\xe2\x80\x99s", "ééééé", "hahahahahaha"}
		for _, word := range words {
			for n := 1; n <= 4; n++ {
				s := strings.Repeat(word, n)
				small := w.mergeSmall(tok, nil, s)
				heap := w.mergeHeap(tok, nil, s)
				if diff := cmp.Diff(small, heap); diff != "" {
					t.Errorf("merge(%q): small and heap paths differ (-small +heap):\n%s", s, diff)
				}
			}
		}
	}
}

func TestLoadRefusesAddedTokenIDs(t *testing.T) {
	base := string(readModel(t, "qwen3"))
	// "ÿ" is vocab token 187, so the Rust crate maps the added token to 187, not to the listed id.
	in := strings.Replace(base, `"content": "<|endoftext|>"`, `"content": "ÿ"`, 1)
	if in == base {
		t.Fatal("test input unchanged")
	}
	_, err := Load([]byte(in))
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "assigns 187") {
		t.Errorf("Load() error = %v, want ErrUnsupported about id 187", err)
	}
}

// TestConcurrentEncode encodes the same texts from several goroutines (run it with -race); the
// shared word cache must not change any result.
func TestConcurrentEncode(t *testing.T) {
	tok := qwen(t)
	texts := []string{"Hello world, hello world!", "  a  \n\n b<|im_end|>", "\u4e2d\u6587\u5b57\u7b26 " + strings.Repeat("ab", 200),
		"don't stop 'til you get enough", "x = f(y) + 42\n\treturn x\n"}
	want := make([][]uint32, len(texts))
	for i, s := range texts {
		want[i] = tok.Encode(s)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8*50*2)
	for g := range 8 {
		wg.Go(func() {
			for r := range 50 {
				i := (g + r) % len(texts)
				if got := tok.Encode(texts[i]); !equalIDs(got, want[i]) {
					errs <- texts[i]
				}
				d := tok.NewDecodeStream()
				var b strings.Builder
				for _, id := range want[i] {
					b.WriteString(d.Next(id))
				}
				if b.String()+d.Flush() != texts[i] {
					errs <- "decode " + texts[i]
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("concurrent result differs for %q", e)
	}
}
