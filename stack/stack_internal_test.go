package stack

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/configs"
	"github.com/stitchllm/stitch/modeldir"
	"github.com/stitchllm/stitch/prepare"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/store"
)

// serveSettings are stitch serve's defaults with the bundled demo model, the built-in simulator
// (no upstream URL) and the embedded store in dir.
func serveSettings(t *testing.T, dir string) (*configs.Config, map[string]Model) {
	t.Helper()
	d, err := modeldir.Open("")
	if err != nil {
		t.Fatal(err)
	}
	m, err := d.Renderer(render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := configs.Default()
	cfg.Models = []configs.ModelProfile{{Name: "qwen3"}}
	cfg.Store.DataDir, cfg.Sim.Fast = dir, true
	return cfg, map[string]Model{"qwen3": {Render: m}}
}

// post sends a Responses request to h and returns the status and body.
func post(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/v1/responses", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// TestOpenServeClose: Open assembles what stitch serve runs (built-in simulator, upstream client,
// Bolt file and its sweeper, artifact tiers) in that order, Serve answers a turn and returns once
// its context ends (shut down and drained), and Close releases the parts last-first: the Bolt
// file is free again, and a stack opened on it continues the stored response.
func TestOpenServeClose(t *testing.T) {
	dir := t.TempDir()
	cfg, models := serveSettings(t, dir)
	st, err := Open(t.Context(), Config{Settings: cfg, Models: models})
	if err != nil {
		t.Fatal(err)
	}
	var opened []string
	for _, c := range st.closers {
		opened = append(opened, c.what)
	}
	if want := []string{"built-in simulator", "upstream client", "embedded store", "store sweeper", "artifact tiers"}; !slices.Equal(opened, want) {
		t.Errorf("opened %q, want %q", opened, want)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- st.Serve(ctx, ln, 10*time.Second) }()
	status, body := post(t, "http://"+ln.Addr().String(), `{"model":"qwen3","input":"hello"}`)
	if status != http.StatusOK {
		t.Fatalf("create: %d %s", status, body)
	}
	id := gjson.GetBytes(body, "id").String()
	stop()
	if err := <-served; err != nil {
		t.Fatalf("Serve after its context ended: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if st.closers != nil {
		t.Errorf("Close left %d parts to release", len(st.closers))
	}

	again, err := Open(t.Context(), Config{Settings: cfg, Models: models})
	if err != nil {
		t.Fatalf("Open on the closed stack's data dir: %v", err)
	}
	defer again.Close()
	hs2 := httptest.NewServer(again.Server)
	defer hs2.Close()
	status, body = post(t, hs2.URL, `{"model":"qwen3","input":"again","previous_response_id":"`+id+`"}`)
	if status != http.StatusOK {
		t.Fatalf("continue %s after reopening: %d %s", id, status, body)
	}
}

// TestOpenFailureReleases: an Open that fails part-way (an unreadable seal keys file, after the
// Bolt file and the simulator started) releases what it had opened, so the data dir opens again
// at once rather than after the file lock's timeout.
func TestOpenFailureReleases(t *testing.T) {
	dir := t.TempDir()
	cfg, models := serveSettings(t, dir)
	bad := *cfg
	bad.Auth.SealKeysFile = filepath.Join(dir, "missing.json")
	if _, err := Open(t.Context(), Config{Settings: &bad, Models: models}); err == nil {
		t.Fatal("Open with a missing seal keys file succeeded")
	}
	st, err := Open(t.Context(), Config{Settings: cfg, Models: models})
	if err != nil {
		t.Fatalf("Open after a failed Open: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestOpenGivenParts: parts a caller brings are used as given and left to it: no Bolt file in
// the data dir, no simulator, and Close releases only the artifact tiers.
func TestOpenGivenParts(t *testing.T) {
	dir := t.TempDir()
	cfg, models := serveSettings(t, dir)
	up, err := Open(t.Context(), Config{Settings: cfg, Models: models}) // its simulator is the upstream
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	cfg2, _ := serveSettings(t, filepath.Join(dir, "unused"))
	var wrapped []string
	st, err := Open(context.Background(), Config{Settings: cfg2, Models: models, Upstream: up.Upstream,
		Checkpoints: store.NewMemory(), CacheSalt: func(tenant, _ string) string { return "given-" + tenant },
		WrapEngine: func(model string, e prepare.Engine) prepare.Engine { wrapped = append(wrapped, model); return e }})
	if err != nil {
		t.Fatal(err)
	}
	var opened []string
	for _, c := range st.closers {
		opened = append(opened, c.what)
	}
	if !slices.Equal(opened, []string{"artifact tiers"}) || !slices.Equal(wrapped, []string{"qwen3"}) {
		t.Errorf("opened %q, wrapped %q; want only the artifact tiers, and qwen3's engine", opened, wrapped)
	}
	if got := st.Runtimes["qwen3"].CacheSalt("acme"); got != "given-acme" {
		t.Errorf("cache salt %q, want the given salter's", got)
	}
	if st.UpstreamURL != up.UpstreamURL {
		t.Errorf("UpstreamURL %q, want the given client's %q", st.UpstreamURL, up.UpstreamURL)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "unused", "*")); len(matches) > 0 {
		t.Errorf("a given checkpoint store still opened files: %v", matches)
	}
}
