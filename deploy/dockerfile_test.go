package deploy

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// No Docker engine runs these tests: they check the Dockerfile's promises statically, and that the
// build context is what `make image` stages. TestImage (image_test.go) builds and runs the image.

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
	for _, in := range ins {
		if strings.HasPrefix(in, "FROM ") {
			froms = append(froms, in)
		}
	}
	// One stage, from nothing: no base image to pull, no registry.
	if len(froms) != 1 || froms[0] != "FROM scratch" {
		t.Fatalf("Dockerfile stages %q, want only FROM scratch", froms)
	}
	has := func(re string) bool {
		r := regexp.MustCompile(re)
		for _, in := range ins {
			if r.MatchString(in) {
				return true
			}
		}
		return false
	}
	checks := []struct{ what, re string }{
		{"VERSION build arg", `^ARG VERSION\b`},
		{"COMMIT build arg", `^ARG COMMIT\b`},
		{"BUILD_DATE build arg", `^ARG BUILD_DATE\b`},
		{"non-root user", `^USER 65532:65532$`},
		{"data dir owned by the user", `^COPY --chown=65532:65532 \.image/data/ /var/lib/stitch/$`},
		{"data dir as the store", `^ENV .*STITCH_DATA_DIR=/var/lib/stitch\b`},
		{"health check by the binary", `^HEALTHCHECK .*CMD \["/usr/local/bin/stitch", "healthcheck"\]$`},
		{"stitch entrypoint", `^ENTRYPOINT \["/usr/local/bin/stitch"\]$`},
		{"serve by default", `^CMD \["serve"\]`},
		{"port 8080", `^EXPOSE 8080\b`},
		{"listen on 8080", `^ENV STITCH_LISTEN=:8080\b`},
	}
	for _, c := range checks {
		if !has(c.re) {
			t.Errorf("Dockerfile: no %s (want an instruction matching %s)", c.what, c.re)
		}
	}
	for _, in := range ins {
		// The classic builder has no RUN (scratch has no shell anyway), no --mount, no heredocs.
		if strings.HasPrefix(in, "RUN ") || strings.Contains(in, "--mount") || strings.Contains(in, "<<") {
			t.Errorf("Dockerfile: %q needs a shell or BuildKit", in)
		}
		if strings.HasPrefix(in, "COPY ") && !strings.Contains(in, " .image/") {
			t.Errorf("Dockerfile: %q copies from outside .image/, which .dockerignore drops", in)
		}
	}
}

// TestImageContext checks what `make image` stages against the Dockerfile: the user its
// /etc/passwd names is the Dockerfile's USER, and .dockerignore sends .image/ and nothing else.
func TestImageContext(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join("..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^IMAGE_UID\s*:?=\s*65532$`).Match(mk) {
		t.Error("Makefile: IMAGE_UID is not 65532, the Dockerfile's USER")
	}
	if !bytes.Contains(mk, []byte(`stitch:x:$(IMAGE_UID):$(IMAGE_UID):stitch:/var/lib/stitch:`)) {
		t.Error("Makefile: image-context writes no passwd entry for IMAGE_UID with home /var/lib/stitch")
	}
	if !bytes.Contains(mk, []byte("CGO_ENABLED=0 GOOS=linux $(GO) build -trimpath")) {
		t.Error("Makefile: the image's binary is not a static -trimpath build")
	}
	data, err := os.ReadFile(filepath.Join("..", ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var pats []string
	for line := range strings.Lines(string(data)) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			pats = append(pats, line)
		}
	}
	if strings.Join(pats, " ") != "* !.image" {
		t.Errorf(".dockerignore patterns %q, want [* !.image]: the context is the staged .image/ only", pats)
	}
}
