package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// codexTimeout bounds one `codex exec` run (each model request inside is answered by the sim in
// milliseconds; the rest is Codex's own start-up).
const codexTimeout = 90 * time.Second

// agentProfile is a model family the agent clients run on: the served model name, the model
// directory under testdata/models, the chat template that replaces the directory's (a file under
// testdata/render; "" keeps the directory's) and vLLM's parser names. The README's families table
// gives the profile each family needs.
type agentProfile struct {
	name, dir, template         string
	toolParser, reasoningParser string
	harmony                     bool // gpt-oss: rendered through Harmony; the reference is `stitch render --responses`
	// openaiSDK also runs e2e/node/openai_sdk.mjs (the `openai` npm SDK; the Go SDK's gpt-oss run
	// is TestGPTOSS).
	openaiSDK bool
	// codexOnly skips the Agents SDK (TestNode runs it on this profile) and exact mode, whose
	// frozen history differs from a full render where the template rewrites history (Qwen3 drops
	// earlier think blocks).
	codexOnly bool
}

var agentProfiles = []agentProfile{
	// Qwen3-Coder: its own template (XML tool definitions, XML calls) on the Qwen3 tokenizer (the
	// Qwen3-Coder tokenizer.json is not available offline; the template's special tokens are Qwen3's).
	{name: "qwen3-coder", dir: "qwen3", template: "qwen3/qwen3-coder.jinja", toolParser: "qwen3_coder"},
	// Llama 3.3: the Llama 3.1-3.3 tokenizer with the 3.1 template (identical to 3.3-70B-Instruct's).
	{name: "llama-3.3", dir: "llama3_2", template: "llama3/llama-3.1.jinja", toolParser: "llama3_json"},
	{name: "gpt-oss", dir: "gptoss", toolParser: "openai", reasoningParser: "openai_gptoss", harmony: true, openaiSDK: true},
	// Qwen3 with thinking: Codex's replayed reasoning items carry stitch's encrypted_content, so
	// its store:false continuations resolve their artifact (inline reseed) instead of a full render.
	{name: "qwen3", dir: "qwen3", toolParser: "hermes", reasoningParser: "qwen3", codexOnly: true},
	// Codex on the other families whose tokenizer is here (the README's families table says which
	// families Codex works with). Without reasoning items there is nothing to carry an artifact
	// across Codex's store:false turns: each is a full render, checked equal to the reference.
	// Mistral Nemo is not among them: its template refuses a user message after a tool result
	// (roles must alternate), in vLLM too, so Codex's second turn is a 400.
	{name: "qwen2.5", dir: "qwen2_5", toolParser: "hermes", codexOnly: true},
	{name: "llama-3.2-pythonic", dir: "llama3_2", toolParser: "pythonic", codexOnly: true},
	{name: "deepseek-v3", dir: "deepseek_v3", template: "deepseek_v3/vllm-tool-deepseekv3.jinja", toolParser: "deepseek_v3", codexOnly: true},
	{name: "deepseek-v3.1", dir: "deepseek_v3", template: "deepseek_v3/vllm-tool-deepseekv31.jinja", toolParser: "deepseek_v31", codexOnly: true},
}

// TestAgentClients runs the Agents SDK (e2e/node/agents_sdk.mjs: full-history replay, runs chained
// with previousResponseId, a streamed run) and the Codex CLI (`codex exec`, then `codex exec
// resume` of the same thread: store:false, the whole history replayed each turn, its exec_command
// tool called and answered) against stitch serve in canonical and in exact mode, on a Qwen3-Coder,
// a Llama 3.3 and a gpt-oss profile of the simulator (on gpt-oss the `openai` SDK suite
// openai_sdk.mjs as well), and Codex alone on the Qwen3 demo profile
// (canonical: its continuations reuse artifacts through inline reseed). Every prompt the sim received must equal the
// reference render of the conversation the client sent (previous_response_id resolved from the
// responses the client saw): for gpt-oss `stitch render --responses`, for the template families a
// `--no-artifacts` serve (a full render every turn) given the same conversations.
func TestAgentClients(t *testing.T) {
	st := requireStack(t)
	if st.bin == "" {
		t.Skip("external stack (STITCH_E2E_BASE_URL): cannot start the family stacks")
	}
	node := requireNode(t)
	codex := requireCodex(t)
	for _, p := range agentProfiles {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			runAgentProfile(t, st.bin, node, codex, p)
		})
	}
}

// requireCodex returns the Codex CLI's launcher script (run with node), installed by `npm ci` in
// e2e/node. A missing install fails under CI=true and skips elsewhere, as requireNode does.
func requireCodex(t *testing.T) string {
	t.Helper()
	js, err := filepath.Abs(filepath.Join("node", "node_modules", "@openai", "codex", "bin", "codex.js"))
	if err == nil {
		_, err = os.Stat(js)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Codex CLI missing (run `make e2e-deps`): %v", err)
		}
		t.Skipf("Codex CLI missing (run `make e2e-deps`): %v", err)
	}
	return js
}

func runAgentProfile(t *testing.T, bin, node, codex string, p agentProfile) {
	dir, err := filepath.Abs(filepath.Join("..", "testdata", "models", p.dir))
	if err != nil {
		t.Fatal(err)
	}
	fam := []string{"--model-dir", dir, "--served-model-name", p.name, "--tool-call-parser", p.toolParser}
	if p.reasoningParser != "" {
		fam = append(fam, "--reasoning-parser", p.reasoningParser)
	}
	serveFam := fam
	if p.template != "" {
		tmpl, err := filepath.Abs(filepath.Join("..", "testdata", "render", p.template))
		if err != nil {
			t.Fatal(err)
		}
		serveFam = append(slices.Clone(fam), "--chat-template", tmpl)
	}
	// serve and the reference render share one pinned Harmony date.
	env := []string{"VLLM_SYSTEM_START_DATE=" + gptossStartDate}
	procs := newExtraProcs(t)
	rec := filepath.Join(t.TempDir(), "record.jsonl")
	sim := procs.start(p.name+" sim", func() (*proc, error) {
		return startReady(bin, "sim", "/health", func(addr string) []string {
			return append([]string{"sim", "--listen", addr, "--fast", "--record", rec}, fam...)
		})
	})
	startServe := func(what string, extra ...string) *proc {
		data := t.TempDir()
		return procs.start(p.name+" serve "+what, func() (*proc, error) {
			return startReadyEnv(bin, "serve", "/readyz", env, func(addr string) []string {
				args := []string{"serve", "--listen", addr, "--upstream", "http://" + sim.addr, "--data-dir", data}
				return append(append(args, serveFam...), extra...)
			})
		})
	}
	trap := newEgressTrap(t)

	// The clients, one mode after the other, so the sim records their prompts in request order.
	var exchanges []*exchange
	var exModes []string // the serve's mode for each exchange
	modes := []string{"canonical", "exact"}
	if p.codexOnly {
		modes = modes[:1]
	}
	for _, mode := range modes {
		serve := startServe(mode, "--mode", mode)
		proxy := newRecordingProxy(t, "http://"+serve.addr)
		if p.openaiSDK {
			runNodeScriptAt(t, proxy.url, p.name, node, "openai_sdk.mjs")
		}
		if !p.codexOnly {
			runNodeScriptAt(t, proxy.url, p.name, node, "agents_sdk.mjs")
		}
		runCodex(t, node, codex, proxy.url, p.name, trap.addr)
		// Artifacts are reused through previous_response_id (the Agents SDK) or, for Codex's
		// store:false turns, through the encrypted reasoning items it replays (reasoning families).
		if !p.harmony && (!p.codexOnly || p.reasoningParser != "") {
			if n := metricValue(t, "http://"+serve.addr, `stitch_artifact_resolutions_total{outcome="hit_local"}`); n == 0 {
				t.Errorf("%s: no continuation was prepared from an artifact (hit_local 0)", mode)
			}
		}
		for _, ex := range proxy.exchanges() {
			// Requests answered with an error (the SDK suite's 400s and 404s) generate nothing.
			if ex.status == http.StatusOK {
				exchanges = append(exchanges, ex)
				exModes = append(exModes, mode)
			}
		}
	}
	got := recordedPrompts(t, rec)
	if len(got) != len(exchanges) {
		t.Fatalf("sim recorded %d prompts for %d POST /v1/responses", len(got), len(exchanges))
	}
	bodies := referenceBodies(t, exchanges)

	var want [][]uint32
	if p.harmony {
		want = harmonyReference(t, bin, dir, bodies)
	} else {
		ref := startServe("reference", "--no-artifacts")
		c := &http.Client{Timeout: requestTimeout}
		for i, b := range bodies {
			resp, err := c.Post("http://"+ref.addr+"/v1/responses", "application/json", bytes.NewReader(b))
			if err != nil {
				t.Fatalf("reference request %d: %v", i+1, err)
			}
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("reference request %d: %s\n%s", i+1, resp.Status, out)
			}
		}
		all := recordedPrompts(t, rec)
		want = all[len(got):]
	}
	if len(want) != len(got) {
		t.Fatalf("%d reference prompts for %d recorded", len(want), len(got))
	}
	var exactChains int
	if p.harmony {
		// A canonical continuation is what vLLM builds from its message store: a call the chain
		// generated (an output of a response it continues, directly or not) keeps the header the
		// model wrote (`<|constrain|>json`, as the sim writes calls), where the items path writes
		// ` json`; a call the client sent as input keeps ` json` (TestGPTOSS checks the same).
		ctx, cancel := context.WithTimeout(t.Context(), requestTimeout)
		items := tokenize(t, ctx, bin, dir, "<|channel|>commentary json<|message|>")
		generated := tokenize(t, ctx, bin, dir, "<|channel|>commentary <|constrain|>json<|message|>")
		cancel()
		index := map[string]int{}
		for i, ex := range exchanges {
			index[ex.response().Get("id").Str] = i
		}
		for i, ex := range exchanges {
			if exModes[i] != "canonical" {
				continue
			}
			chainCalls := map[string]bool{}
			for id := gjson.GetBytes(ex.body, "previous_response_id").Str; id != ""; {
				j, ok := index[id]
				if !ok {
					break
				}
				for _, it := range exchanges[j].response().Get("output").Array() {
					if it.Get("type").Str == "function_call" {
						chainCalls[it.Get("call_id").Str] = true
					}
				}
				id = gjson.GetBytes(exchanges[j].body, "previous_response_id").Str
			}
			var which []bool // per call of the conversation, in order: generated by the chain
			for _, it := range gjson.GetBytes(bodies[i], "input").Array() {
				if it.Get("type").Str == "function_call" {
					which = append(which, chainCalls[it.Get("call_id").Str])
				}
			}
			want[i] = replaceIDsAt(want[i], items, generated, which)
		}
		_, gen := recordedGenerations(t, rec)
		byID := map[string]int{}
		for i, ex := range exchanges {
			byID[ex.response().Get("id").Str] = i
		}
		for i, ex := range exchanges {
			j, ok := byID[gjson.GetBytes(ex.body, "previous_response_id").Str]
			if !ok || exModes[i] != "exact" {
				continue
			}
			history := append(slices.Clone(got[j]), gen[j]...)
			if n := len(history); n > 0 && history[n-1] == 200002 { // <|return|> is <|end|> in history
				history[n-1] = 200007
			}
			if len(got[i]) >= len(history) && slices.Equal(got[i][:len(history)], history) {
				if tail := got[i][len(history):]; len(tail) <= len(want[i]) && slices.Equal(want[i][len(want[i])-len(tail):], tail) {
					want[i] = got[i]
					exactChains++
				}
			}
		}
	}
	for i := range got {
		if !slices.Equal(got[i], want[i]) {
			ex := exchanges[i]
			t.Errorf("request %d (%s, previous_response_id %q): prompt (%d ids) differs from the reference (%d ids) at id %d",
				i+1, ex.client(), gjson.GetBytes(ex.body, "previous_response_id").Str, len(got[i]), len(want[i]), firstDiffIDs(got[i], want[i]))
		}
	}
	if p.harmony && !p.codexOnly && exactChains == 0 {
		t.Errorf("exact mode: no continuation extended its previous prompt and generated ids")
	}
	t.Logf("%d prompts equal their reference (%d chained with previous_response_id; %d exact-mode Harmony continuations)", len(got), countChained(exchanges), exactChains)
	trap.check(t)
}

// runCodex runs `codex exec` and then `codex exec resume` of its thread against the stitch at
// baseURL. Everything Codex needs lives in temporary directories: CODEX_HOME (config.toml naming
// stitch as the model provider, sessions), HOME, the working directory, and a PATH with nothing
// on it. The sandbox is read-only and approvals are off; the commands the sim writes are single
// words from the prompt or from its word list, which name no program. Any connection Codex tries
// beyond loopback goes through HTTPS_PROXY to trapAddr, which the test fails on.
func runCodex(t *testing.T, node, codex, baseURL, model, trapAddr string) {
	t.Helper()
	home, work, empty := t.TempDir(), t.TempDir(), t.TempDir()
	config := fmt.Sprintf(`model = %q
model_provider = "stitch"
approval_policy = "never"
sandbox_mode = "read-only"
check_for_update_on_startup = false

[features]
plugins = false

[analytics]
enabled = false

[model_providers.stitch]
name = "stitch"
base_url = %q
env_key = "STITCH_E2E_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`, model, baseURL+"/v1")
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	proxy := "http://" + trapAddr
	env := []string{"HOME=" + work, "CODEX_HOME=" + home, "PATH=" + empty, "STITCH_E2E_KEY=" + apiKey,
		"HTTPS_PROXY=" + proxy, "HTTP_PROXY=" + proxy, "ALL_PROXY=" + proxy, "NO_PROXY=127.0.0.1,localhost"}
	run := func(what string, args ...string) []gjson.Result {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), codexTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, append([]string{codex, "exec", "--skip-git-repo-check", "--json"}, args...)...)
		cmd.Dir, cmd.Env = work, env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("codex %s: %v (context: %v)\nstdout:\n%s\nstderr:\n%s", what, err, ctx.Err(), stdout.String(), stderr.String())
		}
		var events []gjson.Result
		for line := range strings.Lines(stdout.String()) {
			if gjson.Valid(line) {
				events = append(events, gjson.Parse(line))
			}
		}
		checkCodexTurn(t, what, events, stdout.String())
		return events
	}
	thread := func(what string, events []gjson.Result) string {
		t.Helper()
		if len(events) == 0 || events[0].Get("type").Str != "thread.started" || events[0].Get("thread_id").Str == "" {
			t.Fatalf("codex %s: no thread.started event first", what)
		}
		return events[0].Get("thread_id").Str
	}
	id := thread("exec", run("exec", "List this folder with Pwd."))
	if resumed := thread("exec resume", run("exec resume", "resume", id, "Now show it with Ls.")); resumed != id {
		t.Errorf("codex exec resume: thread %q, want %q", resumed, id)
	}
}

// checkCodexTurn checks one `codex exec --json` run: the model called the shell tool, Codex ran it
// (or reported why not), the model answered with the tool's output, and the turn completed.
func checkCodexTurn(t *testing.T, what string, events []gjson.Result, raw string) {
	t.Helper()
	var sawCommand, sawAnswer, completed bool
	for _, ev := range events {
		switch ev.Get("type").Str {
		case "item.completed":
			switch ev.Get("item.type").Str {
			case "command_execution":
				sawCommand = true
			case "agent_message":
				sawAnswer = sawCommand && strings.HasPrefix(ev.Get("item.text").Str, "The tool returned: ")
			}
		case "turn.completed":
			completed = true
		case "turn.failed", "error":
			t.Errorf("codex %s: %s", what, ev.Raw)
		}
	}
	if !sawCommand || !sawAnswer || !completed {
		t.Errorf("codex %s: tool call %v, answer quoting the tool output %v, turn completed %v:\n%s", what, sawCommand, sawAnswer, completed, raw)
	}
}

// exchange is one POST /v1/responses through a recordingProxy: the request body and the response
// body as it was sent (JSON, or the SSE stream).
type exchange struct {
	body   []byte
	ua     string
	status int
	resp   bytes.Buffer
}

// client names the client that sent the request, from its User-Agent.
func (e *exchange) client() string {
	switch ua := strings.ToLower(e.ua); {
	case strings.Contains(ua, "codex"):
		return "codex"
	case strings.Contains(ua, "agents"):
		return "agents sdk"
	}
	return e.ua
}

// response returns the final response object: the JSON body, or the stream's terminal event's.
func (e *exchange) response() gjson.Result {
	raw := e.resp.Bytes()
	if gjson.ValidBytes(raw) {
		return gjson.ParseBytes(raw)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 64<<20)
	var last gjson.Result
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok {
			continue
		}
		ev := gjson.ParseBytes(data)
		switch ev.Get("type").Str {
		case "response.completed", "response.incomplete", "response.failed":
			last = ev.Get("response")
		}
	}
	return last
}

// recordingProxy forwards to a stitch serve and keeps every POST /v1/responses exchange.
type recordingProxy struct {
	url string
	mu  sync.Mutex
	ex  []*exchange
}

func newRecordingProxy(t *testing.T, target string) *recordingProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := &recordingProxy{}
	fwd := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(u) },
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			if ex, ok := resp.Request.Context().Value(exchangeKey{}).(*exchange); ok {
				rp.mu.Lock()
				ex.status = resp.StatusCode
				rp.mu.Unlock()
				resp.Body = teeBody{ReadCloser: resp.Body, w: &lockedWriter{mu: &rp.mu, w: &ex.resp}}
			}
			return nil
		},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/responses" {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			ex := &exchange{body: body, ua: r.UserAgent()}
			rp.mu.Lock()
			rp.ex = append(rp.ex, ex)
			rp.mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(body))
			r = r.WithContext(context.WithValue(r.Context(), exchangeKey{}, ex))
		}
		fwd.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	rp.url = srv.URL
	return rp
}

type exchangeKey struct{}

// exchanges returns the exchanges so far; call it once the clients are done.
func (rp *recordingProxy) exchanges() []*exchange {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return slices.Clone(rp.ex)
}

type teeBody struct {
	io.ReadCloser
	w io.Writer
}

func (b teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.w.Write(p[:n])
	}
	return n, err
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// referenceBodies returns, per exchange, the request as a full-history request: previous_response_id
// resolved into the conversation it names (that response's conversation and output, as the client
// received them), not streamed. What a template renders is unchanged: instructions, tools,
// tool_choice and reasoning are the request's own.
func referenceBodies(t *testing.T, exs []*exchange) [][]byte {
	t.Helper()
	convs := map[string][]json.RawMessage{} // response id → its conversation, output included
	out := make([][]byte, len(exs))
	for i, ex := range exs {
		var conv []json.RawMessage
		if prev := gjson.GetBytes(ex.body, "previous_response_id").Str; prev != "" {
			c, ok := convs[prev]
			if !ok {
				t.Fatalf("request %d: previous_response_id %s was not answered before", i+1, prev)
			}
			conv = slices.Clone(c)
		}
		switch in := gjson.GetBytes(ex.body, "input"); {
		case in.Type == gjson.String:
			conv = append(conv, mustJSON(t, map[string]string{"role": "user", "content": in.Str}))
		case in.IsArray():
			for _, it := range in.Array() {
				conv = append(conv, json.RawMessage(it.Raw))
			}
		}
		b, err := sjson.DeleteBytes(ex.body, "previous_response_id")
		if err == nil {
			b, err = sjson.SetRawBytes(b, "input", mustJSON(t, conv))
		}
		if err == nil {
			b, err = sjson.SetBytes(b, "stream", false)
		}
		if err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		out[i] = b
		resp := ex.response()
		if resp.Get("status").Str != "completed" {
			t.Fatalf("request %d (%s): response %s", i+1, ex.client(), resp.Raw)
		}
		full := slices.Clone(conv)
		for _, it := range resp.Get("output").Array() {
			full = append(full, json.RawMessage(it.Raw))
		}
		convs[resp.Get("id").Str] = full
	}
	return out
}

// replaceIDsAt replaces the k-th occurrence of old in ids with new where which[k] is true.
func replaceIDsAt(ids, old, new []uint32, which []bool) []uint32 {
	var out []uint32
	k := 0
	for i := 0; i < len(ids); {
		if len(old) > 0 && i+len(old) <= len(ids) && slices.Equal(ids[i:i+len(old)], old) {
			if k < len(which) && which[k] {
				out = append(out, new...)
			} else {
				out = append(out, old...)
			}
			k++
			i += len(old)
			continue
		}
		out = append(out, ids[i])
		i++
	}
	return out
}

// harmonyReference renders each body with `stitch render --responses`.
func harmonyReference(t *testing.T, bin, dir string, bodies [][]byte) [][]uint32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), requestTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "render", "--responses", "--model-dir", dir, "--tool-call-parser", "openai", "--start-date", gptossStartDate)
	cmd.Stdin = bytes.NewReader(append(bytes.Join(bodies, []byte("\n")), '\n'))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ref, err := cmd.Output()
	if err != nil {
		t.Fatalf("stitch render --responses: %v\n%s", err, stderr.String())
	}
	var want [][]uint32
	for line := range strings.Lines(string(ref)) {
		var o struct {
			Tokens []uint32 `json:"tokens"`
		}
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			t.Fatalf("render output %q: %v", line, err)
		}
		want = append(want, o.Tokens)
	}
	return want
}

func countChained(exs []*exchange) int {
	n := 0
	for _, ex := range exs {
		if gjson.GetBytes(ex.body, "previous_response_id").Str != "" {
			n++
		}
	}
	return n
}

// metricValue returns the value of one sample line of serve's /metrics (0 when absent).
func metricValue(t *testing.T, base, sample string) float64 {
	t.Helper()
	resp, err := (&http.Client{Timeout: requestTimeout}).Get(base + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			var f float64
			fmt.Sscan(v, &f)
			return f
		}
	}
	return 0
}

// egressTrap is a loopback listener given to clients as their HTTP(S) proxy: any connection to it
// is a request that would have left the machine.
type egressTrap struct {
	addr string
	mu   sync.Mutex
	seen []string
}

func newEgressTrap(t *testing.T) *egressTrap {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := &egressTrap{addr: l.Addr().String()}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			tr.mu.Lock()
			tr.seen = append(tr.seen, strings.TrimSpace(line))
			tr.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
	})
	return tr
}

func (tr *egressTrap) check(t *testing.T) {
	t.Helper()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, s := range tr.seen {
		t.Errorf("a client tried to leave loopback: %q", s)
	}
}
