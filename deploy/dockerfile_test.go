package deploy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// No Docker engine runs these tests: they check the Dockerfile's promises statically and that the
// build context left by .dockerignore still holds every file `go build .` reads.

// dockerInstructions returns the Dockerfile's instructions (keyword upper-cased, continuation lines
// joined, comments dropped).
func dockerInstructions(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	var cur strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cont := strings.HasSuffix(line, "\\")
		cur.WriteString(strings.TrimSuffix(line, "\\"))
		if cont {
			cur.WriteByte(' ')
			continue
		}
		ins := cur.String()
		cur.Reset()
		kw, rest, _ := strings.Cut(ins, " ")
		out = append(out, strings.ToUpper(kw)+" "+strings.TrimSpace(rest))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDockerfile(t *testing.T) {
	ins := dockerInstructions(t)
	var froms []string
	final := -1 // index of the last FROM
	for i, in := range ins {
		if strings.HasPrefix(in, "FROM ") {
			froms = append(froms, in)
			final = i
		}
	}
	if len(froms) < 2 {
		t.Fatalf("Dockerfile has %d stages, want a multi-stage build", len(froms))
	}
	runtime := ins[final:]
	has := func(stage []string, re string) bool {
		r := regexp.MustCompile(re)
		for _, in := range stage {
			if r.MatchString(in) {
				return true
			}
		}
		return false
	}
	checks := []struct {
		what  string
		stage []string
		re    string
	}{
		{"static build", ins[:final], `CGO_ENABLED=0`},
		{"version ldflags", ins[:final], `-X main\.version=\$\{VERSION\}`},
		{"commit ldflags", ins[:final], `-X main\.commit=\$\{COMMIT\}`},
		{"build date ldflags", ins[:final], `-X main\.buildDate=\$\{BUILD_DATE\}`},
		{"VERSION build arg", ins[:final], `^ARG VERSION\b`},
		{"COMMIT build arg", ins[:final], `^ARG COMMIT\b`},
		{"BUILD_DATE build arg", ins[:final], `^ARG BUILD_DATE\b`},
		{"non-root user", runtime, `^USER [1-9][0-9]*(:[1-9][0-9]*)?$`},
		{"health check on /healthz", runtime, `^HEALTHCHECK .*CMD .*http://127\.0\.0\.1:8080/healthz`},
		{"stitch entrypoint", runtime, `^ENTRYPOINT \[".*stitch"\]`},
		{"serve by default", runtime, `^CMD \["serve"\]`},
		{"port 8080", runtime, `^EXPOSE 8080\b`},
	}
	for _, c := range checks {
		if !has(c.stage, c.re) {
			t.Errorf("Dockerfile: no %s (want an instruction matching %s)", c.what, c.re)
		}
	}
	// The probe binary must exist in the runtime base: busybox wget is in Alpine and busybox
	// images, not in distroless or scratch.
	base := froms[len(froms)-1]
	if !strings.Contains(base, "alpine") && !strings.Contains(base, "busybox") && has(runtime, `HEALTHCHECK .*wget`) {
		t.Errorf("runtime base %q may have no wget for the HEALTHCHECK", base)
	}
}

// dockerignore returns the patterns of ../.dockerignore.
func dockerignore(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var pats []string
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "!") {
			t.Fatalf(".dockerignore exception %q: extend ignored() before using exceptions", line)
		}
		pats = append(pats, strings.TrimPrefix(line, "/"))
	}
	return pats
}

// ignored reports whether the context path p (slash-separated, relative to the root) is excluded:
// a pattern matches p or one of its parent directories; a leading "**/" matches at any depth. This
// is the subset of Docker's rules .dockerignore uses.
func ignored(pats []string, p string) bool {
	parts := strings.Split(p, "/")
	for _, pat := range pats {
		anyDepth := strings.HasPrefix(pat, "**/")
		pat = strings.TrimPrefix(pat, "**/")
		n := strings.Count(pat, "/") + 1
		for start := 0; start+n <= len(parts); start++ {
			if start > 0 && !anyDepth {
				break
			}
			for end := start + n; end <= len(parts); end++ {
				if end-start != n {
					continue
				}
				if ok, _ := path.Match(pat, strings.Join(parts[start:end], "/")); ok {
					return true
				}
			}
		}
	}
	return false
}

func TestDockerignoreMatcher(t *testing.T) {
	pats := []string{".git", "**/node_modules", "*.test", "testdata", "**/testdata", "docs"}
	tests := []struct {
		path string
		want bool
	}{
		{".git/config", true},
		{"tools/oracle/node_modules/x/index.js", true},
		{"bpe.test", true},
		{"render/bpe.test", false},
		{"testdata/models/qwen3/tokenizer.json", true},
		{"sim/testdata/x", true},
		{"configs/demomodel/qwen3/tokenizer.json.gz", false},
		{"docs/user-guide.md", true},
		{"server/docs.go", false},
		{"main.go", false},
	}
	for _, tt := range tests {
		if got := ignored(pats, tt.path); got != tt.want {
			t.Errorf("ignored(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}

// TestDockerBuildContext lists every file of this module that `go build .` compiles or embeds and
// checks that .dockerignore keeps it in the build context.
func TestDockerBuildContext(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goBin, "list", "-deps", "-json=Dir,Module,GoFiles,CgoFiles,SFiles,HFiles,EmbedFiles", ".")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	type pkg struct {
		Dir                                           string
		Module                                        *struct{ Path string }
		GoFiles, CgoFiles, SFiles, HFiles, EmbedFiles []string
	}
	pats := dockerignore(t)
	needed := []string{"go.mod", "go.sum"}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if p.Module == nil || p.Module.Path != "github.com/stitchllm/stitch" {
			continue
		}
		rel, err := filepath.Rel(root, p.Dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, list := range [][]string{p.GoFiles, p.CgoFiles, p.SFiles, p.HFiles, p.EmbedFiles} {
			for _, f := range list {
				needed = append(needed, filepath.ToSlash(filepath.Join(rel, f)))
			}
		}
	}
	if len(needed) < 10 {
		t.Fatalf("go list found only %v", needed)
	}
	for _, f := range needed {
		if ignored(pats, f) {
			t.Errorf(".dockerignore excludes %s, which `go build .` needs", f)
		}
	}
}
