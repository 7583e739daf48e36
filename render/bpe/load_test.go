package bpe

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// tinyJSON returns a small byte-level tokenizer.json: the 256 byte tokens (ids 0..255 in byte
// order), the given merges (as "a b" strings in the byte-level spelling) with their merged tokens,
// and the added tokens after them.
func tinyJSON(t testing.TB, merges []string, added ...string) []byte {
	t.Helper()
	alpha := newByteLevelAlphabet()
	var vocab []string
	ids := map[string]int{}
	add := func(tok string) {
		if _, ok := ids[tok]; !ok {
			ids[tok] = len(vocab)
			vocab = append(vocab, tok)
		}
	}
	for b := range 256 {
		add(string(alpha.char[b]))
	}
	for _, m := range merges {
		a, b, _ := strings.Cut(m, " ")
		add(a + b)
	}
	var sb strings.Builder
	sb.WriteString(`{"version":"1.0","truncation":null,"padding":null,"added_tokens":[`)
	for i, c := range added {
		if i > 0 {
			sb.WriteByte(',')
		}
		q, _ := json.Marshal(c)
		fmt.Fprintf(&sb, `{"id":%d,"content":%s,"single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}`, len(vocab)+i, q)
	}
	sb.WriteString(`],"normalizer":null,"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true},`)
	sb.WriteString(`"post_processor":null,"decoder":{"type":"ByteLevel","add_prefix_space":true,"trim_offsets":true,"use_regex":true},`)
	sb.WriteString(`"model":{"type":"BPE","dropout":null,"unk_token":null,"continuing_subword_prefix":"","end_of_word_suffix":"","fuse_unk":false,"byte_fallback":false,"ignore_merges":false,"vocab":{`)
	for i, tok := range vocab {
		if i > 0 {
			sb.WriteByte(',')
		}
		q, _ := json.Marshal(tok)
		fmt.Fprintf(&sb, "%s:%d", q, i)
	}
	sb.WriteString(`},"merges":[`)
	for i, m := range merges {
		if i > 0 {
			sb.WriteByte(',')
		}
		q, _ := json.Marshal(m)
		sb.Write(q)
	}
	sb.WriteString("]}}")
	return []byte(sb.String())
}

func TestTinyTokenizer(t *testing.T) {
	// Ranks: "a b" 0, "b c" 1, "ab c" 2, "Ġ a" 3. "abc": (a,b) wins over (b,c), then (ab,c).
	tok, err := Load(tinyJSON(t, []string{"a b", "b c", "ab c", "Ġ a"}, "<s>"))
	if err != nil {
		t.Fatal(err)
	}
	id := func(s string) uint32 {
		v, ok := tok.TokenID(s)
		if !ok {
			t.Fatalf("TokenID(%q) not found", s)
		}
		return v
	}
	tests := []struct {
		in   string
		want []uint32
	}{
		{"abc", []uint32{id("abc")}},
		{"bc", []uint32{id("bc")}},
		{"abcbc", []uint32{id("abc"), id("bc")}},
		{" a<s>ab", []uint32{id("Ġa"), id("<s>"), id("ab")}},
		{"cab", []uint32{id("c"), id("ab")}},
	}
	for _, tt := range tests {
		if got := tok.Encode(tt.in); !equalIDs(got, tt.want) {
			t.Errorf("Encode(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	good := string(tinyJSON(t, []string{"a b"}))
	tests := []struct {
		name, in string
		want     error
	}{
		{"empty", "", ErrInvalid},
		{"truncated", good[:len(good)-3], ErrInvalid},
		{"merge of unknown token", strings.Replace(good, `"merges":["a b"]`, `"merges":["a zz"]`, 1), ErrInvalid},
		{"merge not two tokens", strings.Replace(good, `"merges":["a b"]`, `"merges":["ab"]`, 1), ErrInvalid},
		{"trailing data", good + "x", ErrInvalid},
		{"unknown top-level field", strings.Replace(good, `"version":"1.0"`, `"extra":1`, 1), ErrUnsupported},
		{"unknown model field", strings.Replace(good, `"fuse_unk":false`, `"fuse_unk":false,"frobnicate":1`, 1), ErrUnsupported},
		{"dropout", strings.Replace(good, `"dropout":null`, `"dropout":0.1`, 1), ErrUnsupported},
		{"unk token", strings.Replace(good, `"unk_token":null`, `"unk_token":"a"`, 1), ErrUnsupported},
		{"prefix space", strings.Replace(good, `"add_prefix_space":false`, `"add_prefix_space":true`, 1), ErrUnsupported},
		{"truncation", strings.Replace(good, `"truncation":null`, `"truncation":{"max_length":5}`, 1), ErrUnsupported},
		{"missing byte", strings.Replace(good, `"a":`, `"zz":`, 1), ErrUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.in == good && tt.name != "trailing data" {
				t.Fatal("test input unchanged")
			}
			_, err := Load([]byte(tt.in))
			if !errors.Is(err, tt.want) {
				t.Errorf("Load() error = %v, want %v", err, tt.want)
			}
		})
	}
}

// FuzzLoad checks that Load never panics on malformed files and that whatever it accepts encodes
// and decodes without panicking.
func FuzzLoad(f *testing.F) {
	f.Add(tinyJSON(f, []string{"a b", "b c", "ab c"}, "<s>"), "abc <s> d")
	f.Add(tinyJSON(f, nil), "x")
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{},"merges":[]}}`), "")
	f.Fuzz(func(t *testing.T, data []byte, text string) {
		tok, err := Load(data)
		if err != nil {
			return
		}
		ids := tok.Encode(text)
		_ = tok.Decode(ids)
		_ = tok.AddedTokenSpans(text)
	})
}
