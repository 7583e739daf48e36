package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// nodeTimeout bounds one Node script (each request inside has its own 60 s SDK timeout).
const nodeTimeout = 2 * time.Minute

// TestNode runs the real Node clients (e2e/node) against the stack: the `openai` SDK and the
// Agents SDK. Each script reports "ok - …" lines on stdout and failures on stderr, and exits
// non-zero when an assertion failed.
func TestNode(t *testing.T) {
	st := requireStack(t)
	node := requireNode(t)
	scripts := []struct{ name, script string }{
		{"openai", "openai_sdk.mjs"},
		{"agents", "agents_sdk.mjs"},
	}
	for _, s := range scripts {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			runNodeScript(t, st, node, s.script)
		})
	}
}

// requireNode returns the node binary, and checks the SDKs are installed. Missing pieces fail
// the test under CI=true (CI installs them) and skip it elsewhere.
func requireNode(t *testing.T) string {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf(format, args...)
		}
		t.Skipf(format, args...)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH: %v", err)
	}
	if _, err := os.Stat(filepath.Join("node", "node_modules", "@openai", "agents")); err != nil {
		missing("e2e/node/node_modules missing (run `make e2e-deps`): %v", err)
	}
	return node
}

func runNodeScript(t *testing.T, st *stack, node, script string, env ...string) {
	runNodeScriptAt(t, st.baseURL, modelName, node, script, env...)
}

// runNodeScriptAt runs script against the stitch at baseURL, asking for model, with env added to
// its environment.
func runNodeScriptAt(t *testing.T, baseURL, model, node, script string, env ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), nodeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = "node"
	cmd.Env = append(withoutOpenAIEnv(os.Environ()),
		"OPENAI_BASE_URL="+baseURL+"/v1",
		"OPENAI_API_KEY="+apiKey,
		"OPENAI_AGENTS_DISABLE_TRACING=1",
		"STITCH_MODEL="+model,
	)
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	for line := range strings.Lines(stdout.String()) {
		t.Log(strings.TrimRight(line, "\n"))
	}
	if err != nil {
		t.Fatalf("node %s: %v (context: %v)\nstderr:\n%s", script, err, ctx.Err(), stderr.String())
	}
	if stderr.Len() > 0 {
		t.Logf("node %s stderr:\n%s", script, stderr.String())
	}
}

// withoutOpenAIEnv drops OPENAI_* variables (a developer's real key, org or base URL) so the
// scripts see only what the harness sets.
func withoutOpenAIEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "OPENAI_") {
			out = append(out, kv)
		}
	}
	return out
}
