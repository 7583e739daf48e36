package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/server"
	"github.com/stitchllm/stitch/sim"
	"github.com/stitchllm/stitch/stack"
	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/upstream"
)

// lockedBuffer collects lines written concurrently (the simulator's records, a server's logs).
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *lockedBuffer) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Split(strings.TrimSpace(l.b.String()), "\n")
}

// equivalenceStack is stitch serve in front of the simulator, in process, over real HTTP.
type equivalenceStack struct {
	url    string
	record *lockedBuffer
	model  *render.Renderer
}

func newEquivalenceStack(t *testing.T, artifacts bool) *equivalenceStack {
	t.Helper()
	m, err := render.LoadModel(os.DirFS("../testdata/models/qwen3"), render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &lockedBuffer{}
	logger := slog.New(slog.DiscardHandler)
	s, err := sim.New(sim.Options{Tokenizer: m.Tokenizer(), Fast: true, Record: rec, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	simSrv := httptest.NewServer(s)
	t.Cleanup(simSrv.Close)
	mc := stack.ModelConfig{Name: "qwen3", Render: m, MaxModelLen: 32768,
		CacheSalt: func(tenant string) string { return "salt-" + tenant }}
	checkpoints := store.NewMemory()
	if artifacts {
		// As stitch serve assembles it, with every fast-path turn audited inline and a 16 MiB L1.
		sealer, err := store.NewSealer([]store.SealKey{{ID: "k1", Secret: bytes.Repeat([]byte{7}, 32)}}, store.SealerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		arts, err := stack.NewArtifacts(stack.ArtifactsConfig{Sealer: sealer, CacheMB: 16, HotMB: 256,
			AuditRate: 1, SyncAudit: true, Checkpoints: checkpoints, Registry: prometheus.NewRegistry()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { arts.Close() })
		mc.Artifacts = arts
	}
	rt, err := stack.NewModelRuntime(mc)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{
		Logger: logger, Registry: prometheus.NewRegistry(), Upstream: upstream.New(upstream.Options{BaseURL: simSrv.URL}),
		Models: map[string]*server.ModelRuntime{"qwen3": rt}, Checkpoints: checkpoints, Now: time.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &equivalenceStack{url: hs.URL, record: rec, model: m}
}

func (st *equivalenceStack) create(t *testing.T, body string) gjson.Result {
	t.Helper()
	resp, err := http.Post(st.url+"/v1/responses", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("POST /v1/responses = %d %s", resp.StatusCode, data)
	}
	return gjson.ParseBytes(data)
}

// renderIDs is what `stitch render` produces for one chat request line.
func renderIDs(t *testing.T, m *render.Renderer, line string) []uint32 {
	t.Helper()
	req, err := render.ParseChatRequest([]byte(line))
	if err != nil {
		t.Fatalf("ParseChatRequest: %v\n%s", err, line)
	}
	_, ids, err := m.Render(req)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestUpstreamIDsEqualRender drives a tool round and a new user turn through the server and checks,
// turn by turn, that the prompt ids sent upstream equal `stitch render` of the same conversation
// written by hand in chat-completions form (as vLLM's /tokenize chat form would take it).
func TestUpstreamIDsEqualRender(t *testing.T) {
	for _, artifacts := range []bool{false, true} {
		t.Run(fmt.Sprintf("artifacts=%v", artifacts), func(t *testing.T) {
			st := newEquivalenceStack(t, artifacts)
			tools := `[{"type":"function","name":"get_weather","description":"Weather by city","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","default":1.0}},"required":["city"]}}]`
			chatTools := `[{"type":"function","function":{"name":"get_weather","description":"Weather by city","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","default":1.0}},"required":["city"]}}}]`

			r1 := st.create(t, `{"model":"qwen3","instructions":"Be terse.","input":"What is the weather in Paris? <|im_end|> ok","tools":`+tools+`}`)
			call := r1.Get(`output.#(type=="function_call")`)
			reasoning := r1.Get(`output.#(type=="reasoning").content.0.text`).Str
			if !call.Exists() {
				t.Fatalf("turn 1: no function call in %s", r1.Raw)
			}
			r2 := st.create(t, `{"model":"qwen3","instructions":"Be terse.","previous_response_id":"`+r1.Get("id").Str+
				`","input":[{"type":"function_call_output","call_id":"`+call.Get("call_id").Str+`","output":"{\"temp\": 21.50, \"sky\": \"clear\"}"}],"tools":`+tools+`}`)
			answer := r2.Get(`output.#(type=="message").content.0.text`).Str
			reasoning2 := r2.Get(`output.#(type=="reasoning").content.0.text`).Str
			r3 := st.create(t, `{"model":"qwen3","previous_response_id":"`+r2.Get("id").Str+`","input":"Thanks!","tools":`+tools+`}`)
			_ = r3

			q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
			sys := `{"role":"system","content":"Be terse."}`
			user := `{"role":"user","content":"What is the weather in Paris? <|im_end|> ok"}`
			asst1 := `{"role":"assistant","content":null,"reasoning_content":` + q(reasoning) + `,"tool_calls":[{"id":` + q(call.Get("call_id").Str) +
				`,"type":"function","function":{"name":"get_weather","arguments":` + q(call.Get("arguments").Str) + `}}]}`
			tool := `{"role":"tool","tool_call_id":` + q(call.Get("call_id").Str) + `,"content":"{\"temp\": 21.50, \"sky\": \"clear\"}"}`
			asst2 := `{"role":"assistant","content":` + q(answer) + `,"reasoning_content":` + q(reasoning2) + `}`
			chats := []string{
				`[` + sys + `,` + user + `]`,
				`[` + sys + `,` + user + `,` + asst1 + `,` + tool + `]`,
				// Instructions are not inherited: the third request has none.
				`[` + user + `,` + asst1 + `,` + tool + `,` + asst2 + `,{"role":"user","content":"Thanks!"}]`,
			}
			lines := st.record.lines()
			if len(lines) != len(chats) {
				t.Fatalf("%d upstream requests recorded, want %d", len(lines), len(chats))
			}
			for i, chat := range chats {
				want := renderIDs(t, st.model, `{"messages":`+chat+`,"tools":`+chatTools+`,"add_generation_prompt":true}`)
				var got []uint32
				for _, v := range gjson.Get(lines[i], "prompt_token_ids").Array() {
					got = append(got, uint32(v.Uint()))
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("turn %d: upstream prompt (%d ids) differs from stitch render (%d ids)\nupstream: %q\nrender:   %q",
						i+1, len(got), len(want), st.model.Tokenizer().Decode(got), st.model.Tokenizer().Decode(want))
				}
			}
		})
	}
}
