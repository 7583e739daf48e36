package stream_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stitchllm/stitch/render/bpe"
	"github.com/stitchllm/stitch/stream"
)

// Compile-time guard: render/bpe's DecodeStream is a stream.TokenDecoder.
var _ stream.TokenDecoder = (*bpe.DecodeStream)(nil)

// qwen3 loads the real Qwen3 tokenizer once per test binary (about 1–2 s).
var qwen3 = sync.OnceValues(func() (*bpe.Tokenizer, error) {
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "testdata", "models", "qwen3", "tokenizer.json"))
	if err != nil {
		return nil, err
	}
	return bpe.Load(b)
})

func tokenizer(t testing.TB) *bpe.Tokenizer {
	t.Helper()
	tok, err := qwen3()
	if err != nil {
		t.Fatalf("load qwen3 tokenizer: %v", err)
	}
	return tok
}

// counterIDs returns a deterministic NewID: prefix_0001, prefix_0002, … per prefix.
func counterIDs() func(string) string {
	n := map[string]int{}
	return func(prefix string) string {
		n[prefix]++
		return fmt.Sprintf("%s_%04d", prefix, n[prefix])
	}
}

func fixedNow() time.Time { return time.Unix(1767225600, 0) } // 2026-01-01T00:00:00Z

// archive is a minimal txtar: a comment, then "-- name --" sections.
type archive struct {
	comment string
	files   []archiveFile
}

type archiveFile struct {
	name string
	data string
}

func parseArchive(s string) archive {
	var a archive
	cur := -1
	for len(s) > 0 {
		line := s
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			line, s = s[:i+1], s[i+1:]
		} else {
			s = ""
		}
		trim := strings.TrimRight(line, "\n")
		if strings.HasPrefix(trim, "-- ") && strings.HasSuffix(trim, " --") && len(trim) > 6 {
			a.files = append(a.files, archiveFile{name: strings.TrimSpace(trim[3 : len(trim)-3])})
			cur = len(a.files) - 1
			continue
		}
		if cur < 0 {
			a.comment += line
		} else {
			a.files[cur].data += line
		}
	}
	return a
}

func (a *archive) get(name string) (string, bool) {
	for _, f := range a.files {
		if f.name == name {
			return f.data, true
		}
	}
	return "", false
}

func (a *archive) set(name, data string) {
	for i := range a.files {
		if a.files[i].name == name {
			a.files[i].data = data
			return
		}
	}
	a.files = append(a.files, archiveFile{name: name, data: data})
}

func (a *archive) format() []byte {
	var b bytes.Buffer
	b.WriteString(a.comment)
	for _, f := range a.files {
		fmt.Fprintf(&b, "-- %s --\n", f.name)
		b.WriteString(f.data)
		if f.data != "" && !strings.HasSuffix(f.data, "\n") {
			b.WriteString("\n")
		}
	}
	return b.Bytes()
}

// qwen3Tokenizer is the Qwen3 tokenizer for examples (they have no *testing.T).
func qwen3Tokenizer() *bpe.Tokenizer {
	tok, err := qwen3()
	if err != nil {
		panic(err)
	}
	return tok
}
