package configs

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadPrecedence(t *testing.T) {
	t.Parallel()
	env := envOf(map[string]string{
		"STITCH_CONFIG":   "examples/stitch.yaml",
		"STITCH_LISTEN":   ":9000",
		"STITCH_UPSTREAM": "http://env:8000",
	})
	cfg, err := Load("stitch serve", []string{"--upstream", "http://flag:8000", "--audit-rate", "1"}, env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Listen != ":9000" {
		t.Errorf("listen = %q, want env's :9000 over the file", cfg.Server.Listen)
	}
	if cfg.Upstream.URL != "http://flag:8000" {
		t.Errorf("upstream = %q, want the flag's", cfg.Upstream.URL)
	}
	if cfg.Artifacts.AuditRate != 1 || cfg.Artifacts.TTL != time.Hour {
		t.Errorf("artifacts = %+v", cfg.Artifacts)
	}
	if len(cfg.Models) != 3 || cfg.Models[1].Mode != "exact" || cfg.Models[0].Mode != "canonical" || cfg.Models[2].Mode != "exact" || cfg.Models[2].ToolCallParser != "openai" {
		t.Fatalf("models = %+v", cfg.Models)
	}
	if got := string(cfg.Models[0].ChatTemplateKwargs); got != `{"enable_thinking":true}` {
		t.Errorf("kwargs = %s", got)
	}
}

func TestLoadDefaultsAndSingleModel(t *testing.T) {
	t.Parallel()
	cfg, err := Load("stitch serve", []string{"--model-dir", "/m", "--served-model-name", "x"}, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Listen != ":8080" || cfg.Upstream.URL != "" || cfg.Store.DataDir != "./stitch-data" {
		t.Errorf("defaults not applied: %+v", cfg)
	}
	if len(cfg.Models) != 1 || cfg.Models[0].Dir != "/m" || cfg.Models[0].Name != "x" || cfg.Models[0].ToolCallParser != "" {
		t.Errorf("model = %+v", cfg.Models)
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"bad duration", []string{"--artifact-ttl", "soon"}, []string{"not a duration"}},
		{"all problems at once", []string{"--mode", "fast", "--audit-rate", "2", "--upstream", "ftp://x"},
			[]string{"mode:", "audit-rate:", "upstream:"}},
		{"stray argument", []string{"extra"}, []string{"unexpected arguments"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load("stitch serve", tt.args, envOf(nil), io.Discard)
			if err == nil {
				t.Fatalf("Load(%q) = nil error", tt.args)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Load(%q) error %q lacks %q", tt.args, err, w)
				}
			}
		})
	}
}

func TestLoadHelp(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	_, err := Load("stitch serve", []string{"--help"}, envOf(nil), &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err = %v, want flag.ErrHelp", err)
	}
	for _, name := range FlagNames() {
		if !strings.Contains(out.String(), "-"+name) {
			t.Errorf("help lacks --%s", name)
		}
	}
}

func TestSecretRedacted(t *testing.T) {
	t.Parallel()
	if got := Secret("hunter2").LogValue().String(); got != "[redacted]" {
		t.Errorf("LogValue = %q", got)
	}
}
