package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/store/redistest"
)

// Issue 14, "one request must never crash a pod, leak a tenant, or lose a response": each
// numbered finding reproduced against real processes (stitch sim, stitch serve, redis-server, and
// the recording front of abuse_front_test.go) and its fix proven. Sizes are small by default;
// STITCH_E2E_HEAVY=1 runs the issue's own sizes. No assertion depends on timing: waits poll for a
// condition, and the short timeouts given to serve only make the faults answer sooner.

const (
	abuseKeyA, abuseTenantA = "sk-abuse-alpha", "alpha"
	abuseKeyB, abuseTenantB = "sk-abuse-beta", "beta"
	// upstreamKey is what the front (playing vLLM --api-key) demands.
	upstreamKey = "sk-upstream-e2e"
)

func heavy() bool { return os.Getenv("STITCH_E2E_HEAVY") == "1" }

// abusePod is a serve in front of the front.
type abusePod struct {
	base string
	proc *proc
}

type abuseEnv struct {
	st    *stack
	front *front
	procs *extraProcs
	keys  string
	pod   *abusePod // tight body, admission and write limits; Redis; two tenants
	slow  *abusePod // tight upstream timeouts
}

func startAbuse(t *testing.T) *abuseEnv {
	t.Helper()
	st := requireStack(t)
	if st.bin == "" {
		t.Skip("external stack (STITCH_E2E_BASE_URL): cannot start the abuse pods")
	}
	rs := redistest.StartServer(t)
	env := &abuseEnv{st: st, procs: newExtraProcs(t)}
	dir := t.TempDir()
	env.keys = filepath.Join(dir, "api-keys.json")
	writeAbuseKeys(t, env.keys)
	env.front = startFront(t, st.simAddr, upstreamKey)
	seal, err := filepath.Abs(filepath.Join("testdata", "portable", "seal-keys.json"))
	if err != nil {
		t.Fatal(err)
	}
	env.pod = env.startPod(t, filepath.Join(dir, "pod"),
		"--redis", "redis://"+rs.Addr, "--seal-keys", seal,
		"--max-body-bytes", "8388608", "--max-inflight-body-mb", "16", "--body-read-timeout", "2s",
		"--max-concurrent-responses", "2", "--write-timeout", "5s", "--memory-limit-mb", "1024")
	env.slow = env.startPod(t, filepath.Join(dir, "slow"),
		"--upstream-timeout", "1s", "--upstream-idle-timeout", "1s")
	return env
}

func (env *abuseEnv) startPod(t *testing.T, dataDir string, extra ...string) *abusePod {
	t.Helper()
	p := env.procs.start("serve", func() (*proc, error) {
		return startReady(env.st.bin, "serve", "/readyz", func(addr string) []string {
			return append([]string{"serve", "--listen", addr, "--upstream", "http://" + env.front.addr,
				"--upstream-api-key", upstreamKey, "--served-model-name", modelName, "--data-dir", dataDir,
				"--api-keys", env.keys}, extra...)
		})
	})
	return &abusePod{base: "http://" + p.addr, proc: p}
}

func writeAbuseKeys(t *testing.T, path string) {
	t.Helper()
	var entries []map[string]string
	for key, tenant := range map[string]string{abuseKeyA: abuseTenantA, abuseKeyB: abuseTenantB} {
		sum := sha256.Sum256([]byte(key))
		entries = append(entries, map[string]string{"tenant": tenant, "key_sha256": hex.EncodeToString(sum[:])})
	}
	if err := os.WriteFile(path, mustJSON(t, entries), 0o600); err != nil {
		t.Fatal(err)
	}
}

// do sends one request as the tenant of key; rawURL may hold "..", "%2e" and the like verbatim.
func (p *abusePod) do(t *testing.T, ctx context.Context, key, method, path string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.base+path, rd)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read: %v", method, path, err)
	}
	return resp.StatusCode, resp.Header, b
}

// alive fails t unless the pod still answers /healthz (it did not crash).
func (p *abusePod) alive(t *testing.T) {
	t.Helper()
	if p.proc.exited() {
		t.Fatalf("serve exited: %s", p.proc.state())
	}
	resp, err := http.Get(p.base + "/healthz")
	if err != nil {
		t.Fatalf("serve gone: %v", err)
	}
	resp.Body.Close()
}

// wantError checks an OpenAI-shaped error with status (and code and param when not empty).
func wantError(t *testing.T, what string, status int, hdr http.Header, b []byte, gotStatus int, code, param string) {
	t.Helper()
	if gotStatus != status {
		t.Errorf("%s: status %d, want %d; body %.300s", what, gotStatus, status, b)
		return
	}
	if ct := hdr.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s: Content-Type %q, want application/json", what, ct)
	}
	_, gotCode, gotParam, msg := decodeAPIError(t, b)
	if code != "" && gotCode != code {
		t.Errorf("%s: code %q, want %q (%s)", what, gotCode, code, msg)
	}
	if param != "" && gotParam != param {
		t.Errorf("%s: param %q, want %q (%s)", what, gotParam, param, msg)
	}
}

func TestAbuse(t *testing.T) {
	env := startAbuse(t)
	t.Run("1_nesting", env.testNesting)
	t.Run("2_cache_salt", env.testCacheSalt)
	t.Run("3_allowlist", env.testAllowlist)
	t.Run("4_upstream_key", env.testUpstreamKey)
	t.Run("8_admission", env.testAdmission)
	t.Run("9_bodies", env.testBodies)
	t.Run("10_timeouts", env.testTimeouts)
	t.Run("11_no_token_ids", env.testNoTokenIDs)
	t.Run("12_bad_input", env.testBadInput)
	env.pod.alive(t)
	env.slow.alive(t)
}

// Finding 1: a body of '[' is refused by a linear scan (no recursion, no crash), on
// /v1/responses, in tool parameters and on the pass-through routes.
func (env *abuseEnv) testNesting(t *testing.T) {
	ctx := testContext(t)
	n := 1 << 20
	if heavy() {
		n = 7 << 20 // the 6.5 MB, which overflowed the stack
	}
	brackets := bytes.Repeat([]byte("["), n)
	pod := env.pod
	if heavy() {
		pod = env.slow // no 8 MiB body cap there
	}
	status, hdr, b := pod.do(t, ctx, abuseKeyA, http.MethodPost, "/v1/responses", brackets)
	wantError(t, "POST /v1/responses of '['", http.StatusBadRequest, hdr, b, status, "", "")
	status, hdr, b = pod.do(t, ctx, abuseKeyA, http.MethodPost, "/v1/chat/completions", brackets)
	wantError(t, "POST /v1/chat/completions of '['", http.StatusBadRequest, hdr, b, status, "", "")

	deep := strings.Repeat(`{"type":"object","properties":{"x":`, 100000/3) + `{}` + strings.Repeat(`}}`, 100000/3)
	body := []byte(`{"model":"` + modelName + `","input":"hi","tools":[{"type":"function","name":"f","parameters":` + deep + `}]}`)
	status, hdr, b = env.pod.do(t, ctx, abuseKeyA, http.MethodPost, "/v1/responses", body)
	wantError(t, "100k-deep tool parameters", http.StatusBadRequest, hdr, b, status, "", "")
	pod.alive(t)
}

// Finding 2: pass-through generations carry the tenant's own cache_salt whatever the client
// sends; no tenant can name another's salt.
func (env *abuseEnv) testCacheSalt(t *testing.T) {
	ctx := testContext(t)
	salts := func(route string, key string, clientSalt *string) string {
		t.Helper()
		req := map[string]any{"model": modelName, "max_tokens": 2}
		if route == "/v1/completions" {
			req["prompt"] = "A shared system prompt that both tenants send."
		} else {
			req["messages"] = []any{map[string]any{"role": "user", "content": "A shared message."}}
		}
		if clientSalt != nil {
			req["cache_salt"] = *clientSalt
		}
		before := len(env.front.seen())
		status, _, b := env.pod.do(t, ctx, key, http.MethodPost, route, mustJSON(t, req))
		if status != http.StatusOK {
			t.Fatalf("%s as %s: %d %s", route, key, status, b)
		}
		for _, s := range env.front.seen()[before:] {
			if s.path == route {
				salt := gjson.GetBytes(s.body, "cache_salt")
				if salt.Type != gjson.String || salt.Str == "" {
					t.Fatalf("%s reached the upstream without a cache_salt: %s", route, s.body)
				}
				return salt.Str
			}
		}
		t.Fatalf("%s never reached the upstream", route)
		return ""
	}
	for _, route := range []string{"/v1/completions", "/v1/chat/completions"} {
		a := salts(route, abuseKeyA, nil)
		forged := a
		b := salts(route, abuseKeyB, &forged) // B names A's salt
		other := "anything-b-likes"
		b2 := salts(route, abuseKeyB, &other)
		if b == a {
			t.Errorf("%s: tenant B's request carried tenant A's salt %q", route, a)
		}
		if b2 != b {
			t.Errorf("%s: tenant B's salt follows the client (%q, then %q)", route, b, b2)
		}
		if a2 := salts(route, abuseKeyA, &other); a2 != a {
			t.Errorf("%s: tenant A's salt follows the client (%q, then %q)", route, a, a2)
		}
	}
}

// Finding 3: only the allowlisted routes reach the upstream; everything else is an OpenAI 404.
func (env *abuseEnv) testAllowlist(t *testing.T) {
	ctx := testContext(t)
	before := len(env.front.seen())
	refused := []struct{ method, path string }{
		{http.MethodGet, "/v1/../metrics"},
		{http.MethodPost, "/v1/%2e%2e/reset_prefix_cache"},
		{http.MethodPost, "/v1/../collective_rpc"},
		{http.MethodPost, "/v1/load_lora_adapter"},
		{http.MethodPost, "/v1/responses/resp_x/anything"},
		{http.MethodGet, "/v1/responses"},
		{http.MethodPut, "/v1/conversations"},
		{http.MethodPost, "/v1/conversations/conv_1/nope"},
		{http.MethodGet, "/v1/conversations/conv_1/items"},
		{http.MethodGet, "/v1/chat/completions"},
		{http.MethodDelete, "/v1/models"},
		{http.MethodGet, "/v1/models/../../metrics"},
		{http.MethodGet, "/v1//models"},
		{http.MethodGet, "/v1/%6dodels"},
		{http.MethodPost, "/v1/chat/completions/"},
		{http.MethodGet, "/metrics/../v1/models"},
	}
	for _, r := range refused {
		status, hdr, b := env.pod.do(t, ctx, abuseKeyA, r.method, r.path, []byte(`{}`))
		if status == http.StatusNotFound && strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
			decodeAPIError(t, b)
			continue
		}
		if status >= 500 || status == http.StatusOK {
			t.Errorf("%s %s: %d, want an OpenAI 404; body %.200s", r.method, r.path, status, b)
		}
	}
	allowed := map[string]bool{"/v1/models": true, "/v1/chat/completions": true, "/v1/completions": true,
		"/v1/embeddings": true, "/tokenize": true, "/detokenize": true, "/health": true}
	for _, s := range env.front.seen()[before:] {
		if !allowed[s.path] || s.rawPath != "" {
			t.Errorf("%s %s (raw %q) reached the upstream", s.method, s.path, s.rawPath)
		}
	}
	status, _, b := env.pod.do(t, ctx, abuseKeyA, http.MethodGet, "/v1/models", nil)
	if status != http.StatusOK || !gjson.GetBytes(b, "data.0.id").Exists() {
		t.Errorf("GET /v1/models: %d %.200s", status, b)
	}
}

// Finding 4: every pass-through request carries --upstream-api-key (the front answers 401
// otherwise) and never the client's key.
func (env *abuseEnv) testUpstreamKey(t *testing.T) {
	ctx := testContext(t)
	before := len(env.front.seen())
	for _, r := range []struct{ method, path, body string }{
		{http.MethodGet, "/v1/models", ""},
		{http.MethodPost, "/tokenize", `{"model":"` + modelName + `","prompt":"hello"}`},
		{http.MethodPost, "/v1/completions", `{"model":"` + modelName + `","prompt":"hello","max_tokens":2}`},
	} {
		var body []byte
		if r.body != "" {
			body = []byte(r.body)
		}
		status, _, b := env.pod.do(t, ctx, abuseKeyA, r.method, r.path, body)
		if status != http.StatusOK {
			t.Errorf("%s %s through a keyed upstream: %d %.200s", r.method, r.path, status, b)
		}
	}
	for _, s := range env.front.seen()[before:] {
		if s.auth != "Bearer "+upstreamKey {
			t.Errorf("%s %s reached the upstream with Authorization %q", s.method, s.path, s.auth)
		}
	}
}

// Finding 8: beyond --max-concurrent-responses a request gets 429 with Retry-After before any
// work; the admitted ones complete; none is reported failed while stored.
func (env *abuseEnv) testAdmission(t *testing.T) {
	ctx := testContext(t)
	env.front.setMode(modeHang)
	env.front.release = make(chan struct{})
	defer env.front.setMode(modeForward)
	body := mustJSON(t, map[string]any{"model": modelName, "input": "Hold this slot."})
	type result struct {
		status int
		body   []byte
	}
	results := make(chan result, 2)
	for range 2 {
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, env.pod.base+"/v1/responses", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+abuseKeyA)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				results <- result{status: -1, body: []byte(err.Error())}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			results <- result{status: resp.StatusCode, body: b}
		}()
	}
	for env.front.hanging.Load() < 2 {
		if ctx.Err() != nil {
			t.Fatalf("the two held generations never reached the upstream")
		}
		time.Sleep(20 * time.Millisecond)
	}
	status, hdr, b := env.pod.do(t, ctx, abuseKeyB, http.MethodPost, "/v1/responses", body)
	wantError(t, "third concurrent response", http.StatusTooManyRequests, hdr, b, status, "rate_limit_exceeded", "")
	if hdr.Get("Retry-After") == "" {
		t.Errorf("429 without Retry-After")
	}
	status, hdr, b = env.pod.do(t, ctx, abuseKeyB, http.MethodPost, "/v1/chat/completions",
		[]byte(`{"model":"`+modelName+`","messages":[{"role":"user","content":"hi"}]}`))
	wantError(t, "pass-through generation beyond the bound", http.StatusTooManyRequests, hdr, b, status, "", "")
	// Counting input tokens renders and tokenizes the conversation as a create prepares it: the
	// same slots (issue 31: a flood of input_tokens calls took none).
	status, hdr, b = env.pod.do(t, ctx, abuseKeyB, http.MethodPost, "/v1/responses/input_tokens", body)
	wantError(t, "input_tokens beyond the bound", http.StatusTooManyRequests, hdr, b, status, "rate_limit_exceeded", "")
	env.front.setMode(modeForward)
	env.front.letGo()
	for range 2 {
		r := <-results
		if r.status >= 500 && r.status != http.StatusBadGateway {
			t.Errorf("held response: %d %.200s", r.status, r.body)
		}
	}
	// Slots are free again; a burst of conversations either completes (and is then stored) or is
	// refused with 429, and nothing the client saw failed is found stored.
	var wg sync.WaitGroup
	var mu sync.Mutex
	completed, refusedN := 0, 0
	n := 8
	if heavy() {
		n = 64
	}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := mustJSON(t, map[string]any{"model": modelName, "input": fmt.Sprintf("Burst %d.", i)})
			status, _, b := env.pod.do(t, ctx, abuseKeyA, http.MethodPost, "/v1/responses", body)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case status == http.StatusTooManyRequests:
				refusedN++
			case status == http.StatusOK:
				id, st := gjson.GetBytes(b, "id").Str, gjson.GetBytes(b, "status").Str
				gs, _, gb := env.pod.do(t, ctx, abuseKeyA, http.MethodGet, "/v1/responses/"+id, nil)
				switch {
				case st == "completed" && gs != http.StatusOK:
					t.Errorf("response %s completed but GET answers %d %.200s", id, gs, gb)
				case st == "failed" && gs == http.StatusOK && gjson.GetBytes(gb, "status").Str != "failed":
					t.Errorf("response %s reported failed but is stored %s", id, gjson.GetBytes(gb, "status").Str)
				}
				completed++
			default:
				t.Errorf("burst: %d %.200s", status, b)
			}
		}()
	}
	wg.Wait()
	t.Logf("burst of %d: %d completed, %d refused with 429", n, completed, refusedN)
}

// Finding 9: a trickling body is cut (408) instead of held forever; concurrent large bodies
// beyond the in-flight budget are refused (429) before they are read; text that cannot fit the
// context window is refused before tokenization; the memory limit is set.
func (env *abuseEnv) testBodies(t *testing.T) {
	ctx := testContext(t)
	// A body that stops after one byte: the answer comes from --body-read-timeout.
	trickle := func(contentLength int) (net.Conn, *bufio.Reader) {
		conn, err := net.Dial("tcp", strings.TrimPrefix(env.pod.base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST /v1/responses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", abuseKeyA, contentLength)
		return conn, bufio.NewReader(conn)
	}
	conn, rd := trickle(1000)
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(requestTimeout))
	resp, err := http.ReadResponse(rd, nil)
	if err != nil {
		t.Fatalf("trickling body: no answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	wantError(t, "trickling body", http.StatusRequestTimeout, resp.Header, b, resp.StatusCode, "request_timeout", "")

	// Two stalled 6 MiB bodies hold 12 of the 16 MiB in flight: a third is refused at once.
	var held []net.Conn
	for range 2 {
		c, _ := trickle(6 << 20)
		held = append(held, c)
	}
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	big := append(append([]byte(`{"model":"`+modelName+`","input":"`), bytes.Repeat([]byte("a"), 6<<20)...), `"}`...)
	var status int
	var hdr http.Header
	for { // the two stalled bodies are charged as soon as serve reads their headers
		status, hdr, b = env.pod.do(t, ctx, abuseKeyA, http.MethodPost, "/v1/responses", big)
		if status == http.StatusTooManyRequests || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	wantError(t, "body beyond the in-flight budget", http.StatusTooManyRequests, hdr, b, status, "server_busy", "")
	if status == http.StatusTooManyRequests && hdr.Get("Retry-After") == "" {
		t.Errorf("body beyond the in-flight budget: 429 without Retry-After")
	}

	// Arguments far beyond what the context window could hold: 400 before tokenization.
	size := 6 << 20
	args := strings.Repeat("x", size)
	body := mustJSON(t, map[string]any{"model": modelName, "input": []any{
		map[string]any{"type": "message", "role": "user", "content": "call it"},
		map[string]any{"type": "function_call", "call_id": "c1", "name": "f", "arguments": args},
		map[string]any{"type": "function_call_output", "call_id": "c1", "output": "ok"},
	}})
	for _, c := range held {
		c.Close()
	}
	held = nil
	for {
		status, hdr, b = env.slow.do(t, ctx, abuseKeyA, http.MethodPost, "/v1/responses", body)
		if status != http.StatusTooManyRequests || ctx.Err() != nil {
			break
		}
	}
	wantError(t, "6 MiB of function_call.arguments", http.StatusBadRequest, hdr, b, status, "context_length_exceeded", "input")

	// The same for tools (issue 31: a 28 MB tools array cost 5.8 s of CPU before its 400).
	body = mustJSON(t, map[string]any{"model": modelName, "input": "hi", "tools": []any{
		map[string]any{"type": "function", "name": "f", "description": args, "parameters": map[string]any{"type": "object", "properties": map[string]any{}}},
	}})
	for {
		status, hdr, b = env.slow.do(t, ctx, abuseKeyA, http.MethodPost, "/v1/responses", body)
		if status != http.StatusTooManyRequests || ctx.Err() != nil {
			break
		}
	}
	wantError(t, "6 MiB of tools[0].description", http.StatusBadRequest, hdr, b, status, "context_length_exceeded", "tools")

	if !strings.Contains(env.pod.proc.output(), "Go memory limit set") {
		t.Errorf("--memory-limit-mb 1024: no \"Go memory limit set\" log line")
	}
	env.pod.alive(t)
}

// Finding 10: a hung upstream answers 504 in OpenAI's shape, a stalled stream ends in
// response.failed, and /readyz reports the stall until a probe generation succeeds.
func (env *abuseEnv) testTimeouts(t *testing.T) {
	ctx := testContext(t)
	env.front.release = make(chan struct{})
	defer env.front.setMode(modeForward)

	env.front.setMode(modeHang)
	body := mustJSON(t, map[string]any{"model": modelName, "input": "Nobody will answer."})
	status, hdr, b := env.slow.do(t, ctx, abuseKeyA, http.MethodPost, "/v1/responses", body)
	wantError(t, "hung upstream", http.StatusGatewayTimeout, hdr, b, status, "upstream_timeout", "")
	status, _, b = env.slow.do(t, ctx, abuseKeyA, http.MethodGet, "/readyz", nil)
	if status != http.StatusServiceUnavailable {
		t.Errorf("/readyz with a hung upstream: %d %s, want 503", status, b)
	}
	status, hdr, b = env.slow.do(t, ctx, abuseKeyA, http.MethodPost, "/v1/completions", []byte(`{"model":"`+modelName+`","prompt":"x","stream":true}`))
	wantError(t, "hung upstream (pass-through)", http.StatusGatewayTimeout, hdr, b, status, "upstream_timeout", "")

	env.front.setMode(modeStall)
	stream := mustJSON(t, map[string]any{"model": modelName, "input": "Start, then stall.", "stream": true})
	status, hdr, b = env.slow.do(t, ctx, abuseKeyA, http.MethodPost, "/v1/responses", stream)
	if status != http.StatusOK {
		wantError(t, "stalled stream", http.StatusGatewayTimeout, hdr, b, status, "upstream_timeout", "")
	} else {
		events, err := parseSSE(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		res := checkStream(t, events)
		if res.Terminal != "response.failed" {
			t.Errorf("stalled stream ended with %s, want response.failed", res.Terminal)
		}
	}

	env.front.setMode(modeForward)
	for { // readiness comes back once a probe generation gets through
		status, _, _ = env.slow.do(t, ctx, abuseKeyA, http.MethodGet, "/readyz", nil)
		if status == http.StatusOK || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if status != http.StatusOK {
		t.Errorf("/readyz after the upstream recovered: %d", status)
	}
}

// Finding 11: an upstream that ignores return_token_ids fails the turn, stores nothing and says
// why in the log.
func (env *abuseEnv) testNoTokenIDs(t *testing.T) {
	ctx := testContext(t)
	env.front.setMode(modeDropIDsFlag)
	defer env.front.setMode(modeForward)
	stream := mustJSON(t, map[string]any{"model": modelName, "input": "Answer in text only.", "stream": true})
	status, _, b := env.slow.do(t, ctx, abuseKeyA, http.MethodPost, "/v1/responses", stream)
	if status != http.StatusOK {
		t.Fatalf("stream: %d %s", status, b)
	}
	events, err := parseSSE(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	res := checkStream(t, events)
	if res.Terminal != "response.failed" {
		t.Fatalf("text without token ids ended with %s, want response.failed", res.Terminal)
	}
	status, _, b = env.slow.do(t, ctx, abuseKeyA, http.MethodGet, "/v1/responses/"+res.Response.ID, nil)
	if status != http.StatusNotFound {
		t.Errorf("GET of the failed response: %d %.200s, want 404 (nothing stored)", status, b)
	}
	body := mustJSON(t, map[string]any{"model": modelName, "input": "Answer in text only."})
	status, hdr, b := env.slow.do(t, ctx, abuseKeyA, http.MethodPost, "/v1/responses", body)
	if status < 500 {
		t.Errorf("non-stream: %d %.200s, want a 5xx", status, b)
	} else {
		wantError(t, "non-stream", status, hdr, b, status, "upstream_error", "")
	}
	if !strings.Contains(env.slow.proc.output(), "ignores return_token_ids") {
		t.Errorf("no log line names the cause (return_token_ids)")
	}
	// Out of rotation while the upstream sends no ids (issue 31: /readyz said 200 while every
	// request 502ed), back once a probe generation carries ids again.
	if status, _, b := env.slow.do(t, ctx, abuseKeyA, http.MethodGet, "/readyz", nil); status != http.StatusServiceUnavailable {
		t.Errorf("/readyz with an upstream that returns no token ids: %d %.200s, want 503", status, b)
	}
	env.front.setMode(modeForward)
	if status, _, b := env.slow.do(t, ctx, abuseKeyA, http.MethodGet, "/readyz", nil); status != http.StatusOK {
		t.Errorf("/readyz once the upstream returns ids again: %d %.200s, want 200", status, b)
	}
}

// Finding 12 (request side): 400 with the param, never a 5xx.
func (env *abuseEnv) testBadInput(t *testing.T) {
	ctx := testContext(t)
	items := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = map[string]any{"type": "message", "role": "user", "content": "x"}
		}
		return out
	}
	n := 2000
	if heavy() {
		n = 9000
	}
	cases := []struct {
		name  string
		body  any
		param string
	}{
		{"empty input", map[string]any{"model": modelName, "input": []any{}}, "input"},
		{"long item id", map[string]any{"model": modelName, "input": []any{map[string]any{"type": "message", "role": "user", "content": "x", "id": strings.Repeat("i", 300)}}}, "input[0].id"},
		{"NUL in item id", map[string]any{"model": modelName, "input": []any{map[string]any{"type": "message", "role": "user", "content": "x", "id": "msg_\x00"}}}, "input[0].id"},
		{"many input items", map[string]any{"model": modelName, "input": items(n), "max_output_tokens": 16}, ""},
	}
	for _, c := range cases {
		status, hdr, b := env.slow.do(t, ctx, abuseKeyA, http.MethodPost, "/v1/responses", mustJSON(t, c.body))
		if c.param == "" && status == http.StatusOK {
			continue // fit the context and the template's fuel: fine too
		}
		wantError(t, c.name, http.StatusBadRequest, hdr, b, status, "", c.param)
	}
}

// TestPinnedCacheSaltRule: a pinned cache_salt vLLM would refuse is a startup error, not a
// 400 on every request.
func TestPinnedCacheSaltRule(t *testing.T) {
	st := requireStack(t)
	if st.bin == "" {
		t.Skip("external stack")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "stitch.yaml")
	if err := os.WriteFile(cfg, []byte("models:\n  - name: "+modelName+"\n    cache_salt: \"team/a\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(st.bin, "serve", "--config", cfg, "--data-dir", dir, "--listen", "127.0.0.1:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "cache_salt") {
		t.Errorf("serve with cache_salt \"team/a\": err %v, output %s; want a startup error naming cache_salt", err, out)
	}
	_ = json.Valid
}
