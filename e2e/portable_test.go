package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/store/redistest"
)

// Issue 7, "Portable continuations: across pods, tenants and restarts": one redis-server (on a
// free port), one recording `stitch sim` and two `stitch serve` pods sharing --redis, --seal-keys
// and --api-keys (two tenants), each with its own --data-dir. The scenarios are in
// portable_scenarios_test.go; this file holds the cluster and its small helpers.

const (
	// Tenants and their bearer keys (the --api-keys file holds only the keys' sha256).
	tenantAcme, keyAcme     = "acme", "sk-acme-e2e-portable"
	tenantGlobex, keyGlobex = "globex", "sk-globex-e2e-portable"
	// keyGlobexRotated replaces keyGlobex when the test rewrites the --api-keys file.
	keyGlobexRotated = "sk-globex-e2e-portable-rotated"

	// portablePoll bounds every wait on something asynchronous (a record line, a key reload,
	// Redis coming back): the waits poll and end as soon as the condition holds.
	portablePoll = 15 * time.Second
)

// ptPod is one `stitch serve` process; restart keeps its flags and data dir.
type ptPod struct {
	name    string
	dataDir string
	extra   []string // flags beyond the cluster's
	proc    *proc
	base    string // http://127.0.0.1:PORT
}

// ptCluster is the shared stack of the portable scenarios.
type ptCluster struct {
	bin      string
	redis    *redistest.Server
	redisURL string // the pods' --redis
	rdb      *redis.Client
	sim      *proc
	recPath  string
	sealPath string
	keysPath string
	sealer   *store.Sealer // the pods' own keys, to forge what a pod would write
	procs    *extraProcs
	a, b     *ptPod
	script   ptScript
	// globexKey is globex's current key (testTenants rotates it).
	globexKey string
	// stored lists every response a pod reported stored (key → ids), for the final
	// "zero lost stored responses" check.
	stored map[string][]string
	// tally counts the artifact outcomes of every turn, by outcome.
	tally map[string]int
	turns int
}

// ptScript is testdata/portable/script.json.
type ptScript struct {
	Instructions string            `json:"instructions"`
	Tools        []json.RawMessage `json:"tools"`
	Turns        []struct {
		User       string `json:"user"`
		ToolOutput string `json:"tool_output"`
	} `json:"turns"`
}

func startPortableCluster(t *testing.T) *ptCluster {
	t.Helper()
	st := requireStack(t)
	if st.bin == "" {
		t.Skip("external stack (STITCH_E2E_BASE_URL): cannot start Redis-backed pods")
	}
	rs := redistest.StartServer(t) // skips without redis-server, fails under CI=true
	return startPortableClusterOn(t, rs, "redis://"+rs.Addr)
}

// startPortableClusterOn is startPortableCluster with the pods on the Redis at redisURL; rs is
// that server when the test started one (nil for a Redis Cluster: cl.rdb is then nil too).
func startPortableClusterOn(t *testing.T, rs *redistest.Server, redisURL string) *ptCluster {
	t.Helper()
	st := requireStack(t)
	dir := t.TempDir()
	cl := &ptCluster{
		bin: st.bin, redis: rs, redisURL: redisURL, recPath: filepath.Join(dir, "record.jsonl"),
		keysPath: filepath.Join(dir, "api-keys.json"), stored: map[string][]string{}, globexKey: keyGlobex,
		tally: map[string]int{},
	}
	var err error
	if cl.sealPath, err = filepath.Abs(filepath.Join("testdata", "portable", "seal-keys.json")); err != nil {
		t.Fatal(err)
	}
	cl.sealer = loadTestSealer(t, cl.sealPath)
	readJSONFile(t, filepath.Join("testdata", "portable", "script.json"), &cl.script)
	cl.writeKeys(t, map[string]string{keyAcme: tenantAcme, keyGlobex: tenantGlobex})
	if rs != nil {
		cl.rdb = redis.NewClient(&redis.Options{Addr: rs.Addr, MaxRetries: -1})
		t.Cleanup(func() { cl.rdb.Close() })
	}

	cl.procs = newExtraProcs(t) // registered after redistest: pods stop before Redis does
	cl.sim = cl.procs.start("recording sim", func() (*proc, error) { return st.startSim("--record", cl.recPath) })
	cl.a = cl.newPod(t, "A")
	cl.b = cl.newPod(t, "B")
	return cl
}

// newPod starts a pod with the cluster's flags plus extra, in its own data dir (a temp dir of t).
// A pod started for one subtest is stopped when that subtest ends, before its dir is removed.
func (cl *ptCluster) newPod(t *testing.T, name string, extra ...string) *ptPod {
	t.Helper()
	p := &ptPod{name: name, dataDir: filepath.Join(t.TempDir(), "pod-"+name), extra: extra}
	cl.startPod(t, p)
	if t != cl.procs.t {
		t.Cleanup(func() {
			if err := p.proc.stop(); err != nil {
				t.Errorf("stop pod %s: %v", name, err)
			}
		})
	}
	return p
}

// startPod starts (or restarts) p with the cluster's flags on a fresh port.
func (cl *ptCluster) startPod(t *testing.T, p *ptPod) {
	t.Helper()
	// Not cl.procs.start: a failure must fail t (maybe a subtest), not the test owning cl.procs.
	// Pods restart during Redis outages in these scenarios: wait for the pod itself, not Redis
	// (/readyz alone is 503 while Redis answers nothing).
	sp, err := startReady(cl.bin, "serve", "/readyz?store=ignore", func(addr string) []string {
		return append([]string{"serve", "--listen", addr, "--upstream", "http://" + cl.sim.addr,
			"--served-model-name", modelName, "--data-dir", p.dataDir,
			"--redis", cl.redisURL, "--seal-keys", cl.sealPath, "--api-keys", cl.keysPath,
			"--audit-rate", "1"}, p.extra...)
	})
	if sp != nil {
		cl.procs.procs = append(cl.procs.procs, sp) // stopped (and its output logged) at the end
	}
	if err != nil {
		t.Fatalf("start pod %s: %v", p.name, err)
	}
	p.proc = sp
	p.base = "http://" + sp.addr
}

// killPod kills p with SIGKILL (no graceful shutdown) and waits for it to exit.
func (cl *ptCluster) killPod(t *testing.T, p *ptPod) {
	t.Helper()
	if err := p.proc.cmd.Process.Kill(); err != nil && !p.proc.exited() {
		t.Fatalf("kill pod %s: %v", p.name, err)
	}
	<-p.proc.done
}

// writeKeys writes the --api-keys file (key → tenant) atomically: a pod never reads half a file.
func (cl *ptCluster) writeKeys(t *testing.T, keys map[string]string) {
	t.Helper()
	type entry struct {
		Tenant    string `json:"tenant"`
		KeySHA256 string `json:"key_sha256"`
	}
	var entries []entry
	for k, tenant := range keys {
		sum := sha256.Sum256([]byte(k))
		entries = append(entries, entry{Tenant: tenant, KeySHA256: hex.EncodeToString(sum[:])})
	}
	slices.SortFunc(entries, func(x, y entry) int { return strings.Compare(x.KeySHA256, y.KeySHA256) })
	tmp := cl.keysPath + ".tmp"
	if err := os.WriteFile(tmp, mustJSON(t, entries), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, cl.keysPath); err != nil {
		t.Fatal(err)
	}
}

func loadTestSealer(t *testing.T, path string) *store.Sealer {
	t.Helper()
	var entries []struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	readJSONFile(t, path, &entries)
	var keys []store.SealKey
	for _, e := range entries {
		secret, err := base64.StdEncoding.DecodeString(e.Secret)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		keys = append(keys, store.SealKey{ID: e.ID, Secret: secret})
	}
	s, err := store.NewSealer(keys, store.SealerOptions{})
	if err != nil {
		t.Fatalf("sealer from %s: %v", path, err)
	}
	return s
}

func readJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// ptDo sends one request to a pod with the bearer key (none when key is ""); body nil for none.
func ptDo(t *testing.T, p *ptPod, method, path, key string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), requestTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.base+path, rd)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("pod %s: %s %s: %v", p.name, method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("pod %s: %s %s: read body: %v", p.name, method, path, err)
	}
	return resp.StatusCode, resp.Header, b
}

// ptResponse is the part of a Responses object the scenarios read.
type ptResponse struct {
	ID     string            `json:"id"`
	Status string            `json:"status"`
	Error  *ptErrorObject    `json:"error"`
	Output []json.RawMessage `json:"output"`
}

type ptErrorObject struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type ptItem struct {
	Type             string  `json:"type"`
	ID               string  `json:"id"`
	CallID           string  `json:"call_id"`
	EncryptedContent *string `json:"encrypted_content"`
}

// item returns the first output item of type typ.
func (r *ptResponse) item(t *testing.T, typ string) (ptItem, json.RawMessage) {
	t.Helper()
	for _, raw := range r.Output {
		var it ptItem
		if err := json.Unmarshal(raw, &it); err != nil {
			t.Fatalf("decode output item: %v: %s", err, raw)
		}
		if it.Type == typ {
			return it, raw
		}
	}
	t.Fatalf("response %s has no %s item", r.ID, typ)
	return ptItem{}, nil
}

// ptTurn is one generation through a pod: the response, the prompt ids the sim received and its
// cache_salt, and the artifact outcome the pod counted for it.
type ptTurn struct {
	resp    ptResponse
	prompt  []uint32
	salt    string
	outcome string
}

// post sends a POST /v1/responses that must reach the model (200) and returns the turn. A stream
// request's response is the one its terminal event carries.
func (cl *ptCluster) post(t *testing.T, p *ptPod, key string, req map[string]any) ptTurn {
	t.Helper()
	before := resolutions(t, p)
	n0 := len(cl.records(t))
	status, _, b := ptDo(t, p, http.MethodPost, "/v1/responses", key, mustJSON(t, req))
	if status != http.StatusOK {
		t.Fatalf("pod %s: POST /v1/responses = %d %s", p.name, status, b)
	}
	var tr ptTurn
	if stream, _ := req["stream"].(bool); stream {
		events, err := parseSSE(bytes.NewReader(b))
		if err != nil || len(events) == 0 {
			t.Fatalf("pod %s: parse SSE: %v\n%s", p.name, err, b)
		}
		var term struct {
			Response json.RawMessage `json:"response"`
		}
		if err := json.Unmarshal(events[len(events)-1].Data, &term); err != nil {
			t.Fatalf("pod %s: terminal event: %v", p.name, err)
		}
		b = term.Response
	}
	if err := json.Unmarshal(b, &tr.resp); err != nil || tr.resp.ID == "" {
		t.Fatalf("pod %s: response object: %v: %s", p.name, err, b)
	}
	tr.outcome = outcomeDelta(t, p, before, resolutions(t, p))
	cl.tally[tr.outcome]++
	cl.turns++
	recs := cl.waitRecords(t, n0+1)
	tr.prompt = recs[n0].PromptTokenIDs
	if recs[n0].CacheSalt != nil {
		tr.salt = *recs[n0].CacheSalt
	}
	if s, ok := req["store"].(bool); (!ok || s) && tr.resp.Status == "completed" {
		cl.stored[key] = append(cl.stored[key], tr.resp.ID)
	}
	return tr
}

// mustComplete fails the test unless the turn completed.
func (tr ptTurn) mustComplete(t *testing.T, what string) ptTurn {
	t.Helper()
	if tr.resp.Status != "completed" {
		t.Fatalf("%s: status %q (error %+v), want completed", what, tr.resp.Status, tr.resp.Error)
	}
	return tr
}

// scriptRequest returns the request of script turn i continuing prev (nil for the first turn).
func (cl *ptCluster) scriptRequest(t *testing.T, i int, prev *ptTurn) map[string]any {
	t.Helper()
	req := map[string]any{"model": modelName, "instructions": cl.script.Instructions, "tools": cl.script.Tools}
	turn := cl.script.Turns[i]
	switch {
	case turn.ToolOutput != "":
		call, _ := prev.resp.item(t, "function_call")
		req["input"] = []any{map[string]any{"type": "function_call_output", "call_id": call.CallID, "output": turn.ToolOutput}}
	default:
		req["input"] = turn.User
	}
	if prev != nil {
		req["previous_response_id"] = prev.resp.ID
	}
	return req
}

// runScript plays script turns from..to-1 with key, continuing prev (nil at turn 0); turn i goes
// to pods(i). Every turn must complete.
func (cl *ptCluster) runScript(t *testing.T, key string, prev *ptTurn, from, to int, pods func(i int) *ptPod) []ptTurn {
	t.Helper()
	var out []ptTurn
	for i := from; i < to; i++ {
		p := pods(i)
		tr := cl.post(t, p, key, cl.scriptRequest(t, i, prev)).mustComplete(t, fmt.Sprintf("script turn %d on pod %s", i, p.name))
		out = append(out, tr)
		prev = &out[len(out)-1]
	}
	return out
}

// ptRecord is one `stitch sim --record` line.
type ptRecord struct {
	Endpoint       string   `json:"endpoint"`
	PromptTokenIDs []uint32 `json:"prompt_token_ids"`
	CacheSalt      *string  `json:"cache_salt"`
}

// records returns the completions the sim recorded so far (a line still being written is left
// for the next read).
func (cl *ptCluster) records(t *testing.T) []ptRecord {
	t.Helper()
	b, err := os.ReadFile(cl.recPath)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []ptRecord
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		var r ptRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			break // a partial last line
		}
		if r.Endpoint == "/v1/completions" {
			out = append(out, r)
		}
	}
	return out
}

// waitRecords polls until the sim recorded n completions: it writes a line when the generation's
// handler returns, which may be just after stitch received the last token.
func (cl *ptCluster) waitRecords(t *testing.T, n int) []ptRecord {
	t.Helper()
	deadline := time.Now().Add(portablePoll)
	for {
		recs := cl.records(t)
		if len(recs) >= n {
			return recs
		}
		if time.Now().After(deadline) {
			t.Fatalf("sim recorded %d completions after %v, want %d", len(recs), portablePoll, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// resolutions scrapes p's stitch_artifact_resolutions_total by outcome.
func resolutions(t *testing.T, p *ptPod) map[string]float64 {
	t.Helper()
	return scrapeCounter(t, p, "stitch_artifact_resolutions_total", "outcome")
}

// scrapeCounter returns the values of metric name from p's /metrics, by the value of label
// (the key "" for a metric without labels).
func scrapeCounter(t *testing.T, p *ptPod, name, label string) map[string]float64 {
	t.Helper()
	status, _, b := ptDo(t, p, http.MethodGet, "/metrics", "", nil)
	if status != http.StatusOK {
		t.Fatalf("pod %s: GET /metrics = %d", p.name, status)
	}
	out := map[string]float64{}
	for line := range strings.Lines(string(b)) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), name)
		if !ok || (rest != "" && rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		key := ""
		if strings.HasPrefix(rest, "{") {
			labels, after, _ := strings.Cut(rest[1:], "}")
			rest = after
			for _, kv := range strings.Split(labels, ",") {
				if k, v, _ := strings.Cut(kv, "="); k == label {
					key = strings.Trim(v, `"`)
				}
			}
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		if err != nil {
			t.Fatalf("pod %s: metric line %q: %v", p.name, line, err)
		}
		out[key] = v
	}
	return out
}

// outcomeDelta returns the one outcome counted between two scrapes of p.
func outcomeDelta(t *testing.T, p *ptPod, before, after map[string]float64) string {
	t.Helper()
	var grew []string
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			grew = append(grew, fmt.Sprintf("%s+%g", k, d))
		}
	}
	if len(grew) != 1 || !strings.HasSuffix(grew[0], "+1") {
		t.Fatalf("pod %s: want exactly one artifact outcome counted for the turn, got %v", p.name, grew)
	}
	return strings.TrimSuffix(grew[0], "+1")
}

// samePrompt fails the test when got differs from want (the ids of a reference run).
func samePrompt(t *testing.T, what string, got, want []uint32) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	i := 0
	for i < min(len(got), len(want)) && got[i] == want[i] {
		i++
	}
	t.Errorf("%s: prompt ids differ from the reference run at index %d (len %d, want %d)", what, i, len(got), len(want))
}

// checkAPIError checks an OpenAI error answer: status, code (and param when not "").
func checkAPIError(t *testing.T, what string, status int, b []byte, wantStatus int, wantCode, wantParam string) {
	t.Helper()
	if status != wantStatus {
		t.Errorf("%s = %d %s, want %d", what, status, b, wantStatus)
		return
	}
	var e apiErrorBody
	if err := json.Unmarshal(b, &e); err != nil || e.Error == nil || e.Error.Message == "" || e.Error.Type == "" {
		t.Errorf("%s: body is not an OpenAI error object: %s", what, b)
		return
	}
	code, param := "", ""
	if e.Error.Code != nil {
		code = *e.Error.Code
	}
	if e.Error.Param != nil {
		param = *e.Error.Param
	}
	if (wantCode != "" && code != wantCode) || (wantParam != "" && param != wantParam) {
		t.Errorf("%s: error code %q param %q, want %q %q: %s", what, code, param, wantCode, wantParam, b)
	}
}

// artifactKey is the Redis key of a response's artifact (store.RedisArtifacts' layout).
func artifactKey(tenant, id string) string { return "stitch:{" + tenant + "}:art:" + id }
