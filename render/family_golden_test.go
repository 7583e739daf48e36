package render

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stitchllm/stitch/render/bpe"
)

// The family golden suite (testdata/render/families.json, regenerated as testdata/render/README.md
// says): family_cases.jsonl rendered by every family's chat templates with Python Jinja2 after
// vLLM's preprocessing, the content format vLLM detects for each template, and the ids the Rust
// tokenizers give each text where the family's tokenizer is at hand.

type familyTemplate struct {
	Family    string // folder under testdata/render holding tokenizer_config.json
	Template  string // golden base name
	File      string // template file in the folder; "" = tokenizer_config.json's chat_template
	Tokenizer string // @lenml/tokenizer-<name> the ids come from; "" = none offline
	Responses bool   // responses_cases.jsonl is rendered too (responses-<template>.text.jsonl)
}

func readFamilies(t testing.TB) []familyTemplate {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(goldenDir, "families.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []familyTemplate
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// loadFamilyTemplate loads a family folder with the entry's template as --chat-template would.
func loadFamilyTemplate(t testing.TB, f familyTemplate) *ChatTemplate {
	t.Helper()
	dir := filepath.Join(goldenDir, f.Family)
	// The oracle's strftime_now reads a fixed instant, 2026-01-02 03:04:05.
	opts := Options{Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }}
	if f.File != "" {
		src, err := os.ReadFile(filepath.Join(dir, f.File))
		if err != nil {
			t.Fatal(err)
		}
		opts.ChatTemplate = string(src)
	}
	ct, err := LoadChatTemplate(os.DirFS(dir), opts)
	if err != nil {
		t.Fatalf("LoadChatTemplate(%s/%s): %v", f.Family, f.Template, err)
	}
	return ct
}

// familyTokenizer loads testdata/models/<name>/tokenizer.json(.gz). Every family whose manifest
// entry names a tokenizer must have it there and load it (TestGoldenFamilies fails otherwise);
// only Kimi K2 and GLM-4.x, with no tokenizer offline, have their ids skipped with a log line.
func familyTokenizer(t testing.TB, name string) (*bpe.Tokenizer, string) {
	t.Helper()
	if name == "" {
		return nil, "no tokenizer offline"
	}
	dir := filepath.Join("..", "testdata", "models", name)
	data, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if errors.Is(err, os.ErrNotExist) {
		var gz []byte
		if gz, err = os.ReadFile(filepath.Join(dir, "tokenizer.json.gz")); err == nil {
			var zr *gzip.Reader
			if zr, err = gzip.NewReader(bytes.NewReader(gz)); err == nil {
				data, err = io.ReadAll(zr)
			}
		}
	}
	if err != nil {
		return nil, "no " + dir + "/tokenizer.json"
	}
	tok, err := bpe.Load(data)
	if err != nil {
		return nil, "tokenizer does not load yet: " + err.Error()
	}
	return tok, ""
}

func TestGoldenFamilies(t *testing.T) {
	for _, f := range readFamilies(t) {
		t.Run(f.Family+"/"+f.Template, func(t *testing.T) {
			ct := loadFamilyTemplate(t, f)
			base := filepath.Join(goldenDir, f.Family, f.Template)
			wantFormat, err := os.ReadFile(base + ".format")
			if err != nil {
				t.Fatal(err)
			}
			if got := string(ct.ContentFormat()); got != strings.TrimSpace(string(wantFormat)) {
				t.Errorf("content format %q, vLLM's detection gives %q", got, strings.TrimSpace(string(wantFormat)))
			}
			cases := loadGoldenFiles(t, "family_cases.jsonl", filepath.Join(f.Family, f.Template))
			tok, why := familyTokenizer(t, f.Tokenizer)
			if tok == nil {
				if f.Tokenizer != "" {
					t.Fatalf("tokenizer %s: %s", f.Tokenizer, why)
				}
				t.Logf("ids not compared (%s)", why)
			}
			rendered, failures := 0, 0
			for _, c := range cases {
				req, err := requestFromLine(c.line)
				if err != nil {
					t.Errorf("%s: parse request: %v", c.name, err)
					continue
				}
				text, err := ct.RenderText(req)
				switch {
				case c.err != "":
					// Template failures carry Jinja2's exception class and message.
					if err == nil || !strings.Contains(err.Error(), c.err) {
						t.Errorf("%s: error %v, want one with %q", c.name, err, c.err)
					}
					continue
				case err != nil:
					t.Errorf("%s: RenderText: %v", c.name, err)
				case text != c.text:
					t.Errorf("%s: text differs%s", c.name, firstDifference(text, c.text))
				case tok != nil && !slices.Equal(tok.Encode(text), c.ids):
					t.Errorf("%s: ids differ from the Rust oracle", c.name)
				default:
					rendered++
					continue
				}
				if failures++; failures > 10 {
					t.Fatal("too many failures")
				}
			}
			if rendered < 40 {
				t.Errorf("only %d renders match; the suite wants at least 40 per template", rendered)
			}
			t.Logf("%d renders match (ids compared: %v), %d Jinja2 errors matched", rendered, tok != nil, len(cases)-rendered-failures)
		})
	}
}

// firstDifference shows where got and want part, with some context.
func firstDifference(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(0, i-60)
	return fmt.Sprintf(" at byte %d:\n got: %q\nwant: %q", i, got[from:min(len(got), i+80)], want[from:min(len(want), i+80)])
}

// TestGoldenFamiliesResponses renders the Responses cases through FromResponses with the templates
// marked "responses" (among them openai-format ones, GLM-4.6 and Kimi K2) and compares texts.
func TestGoldenFamiliesResponses(t *testing.T) {
	for _, f := range readFamilies(t) {
		if !f.Responses {
			continue
		}
		t.Run(f.Family+"/"+f.Template, func(t *testing.T) {
			ct := loadFamilyTemplate(t, f)
			golden := filepath.Join(f.Family, "responses-"+f.Template)
			for _, c := range loadGoldenFiles(t, "responses_cases.jsonl", golden) {
				req, err := responsesRequest(c.line)
				if err != nil {
					t.Errorf("%s: FromResponses: %v", c.name, err)
					continue
				}
				text, err := ct.RenderText(req)
				switch {
				case c.err != "":
					if err == nil || !strings.Contains(err.Error(), c.err) {
						t.Errorf("%s: error %v, want one with %q", c.name, err, c.err)
					}
				case err != nil:
					t.Errorf("%s: RenderText: %v", c.name, err)
				case text != c.text:
					t.Errorf("%s: text differs%s", c.name, firstDifference(text, c.text))
				}
			}
		})
	}
}

// TestRenderTextMemoFamilies: replaying from the previous turn's memo gives the plain render's
// text in both content formats (the memo keeps message values built for one format).
func TestRenderTextMemoFamilies(t *testing.T) {
	for _, f := range readFamilies(t) {
		t.Run(f.Family+"/"+f.Template, func(t *testing.T) {
			m := loadFamilyTemplate(t, f).m
			for _, c := range loadGoldenFiles(t, "family_cases.jsonl", filepath.Join(f.Family, f.Template)) {
				if c.err != "" || !strings.HasPrefix(c.name, "random_") {
					continue
				}
				full, err := requestFromLine(c.line)
				if err != nil {
					t.Fatal(err)
				}
				var memo *RenderMemo
				for n := 1; n <= len(full.Messages); n++ {
					req := full
					req.Messages = full.Messages[:n]
					want, wantErr := m.RenderText(req)
					got, next, err := m.RenderTextMemo(req, memo)
					if (err != nil) != (wantErr != nil) || got != want {
						t.Fatalf("%s, %d messages: memo render %q (%v), plain %q (%v)", c.name, n, got, err, want, wantErr)
					}
					if err == nil {
						memo = next
					}
				}
			}
		})
	}
}
