package server_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/middleware"
	"github.com/stitchllm/stitch/server"
	"github.com/stitchllm/stitch/sim"
	"github.com/stitchllm/stitch/stack"
	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/upstream"
)

// bgPod is one stitch replica in front of a shared simulator, with shared stores.
type bgPod struct {
	srv *server.Server
	url string
}

type bgCluster struct {
	checkpoints *store.Memory
	runs        *store.Runs
	convs       *store.Conversations
	simURL      string
}

// newBGCluster starts a simulator (slow: a token per decodeEvery, so generations can be
// cancelled mid-way; zero: fast) and the stores replicas share.
func newBGCluster(t *testing.T, decodeEvery time.Duration, now func() time.Time) *bgCluster {
	t.Helper()
	m := loadQwen3(t)
	opts := sim.Options{Tokenizer: m.Tokenizer(), Renderer: sim.ModelRenderer(m), ServedModelName: "qwen3", Logger: slog.New(slog.DiscardHandler)}
	if decodeEvery > 0 {
		opts.DecodePerToken, opts.OutputLen = decodeEvery, 4000
	} else {
		opts.Fast = true
	}
	s, err := sim.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	simSrv := httptest.NewServer(s)
	t.Cleanup(simSrv.Close)
	records := store.MemoryRecords(now)
	return &bgCluster{checkpoints: store.NewMemory(), simURL: simSrv.URL,
		runs:  store.NewRuns(records, store.RunsOptions{Now: now}),
		convs: store.NewConversations(records, store.ConversationsOptions{})}
}

func (c *bgCluster) pod(t *testing.T, name string) *bgPod {
	t.Helper()
	m := loadQwen3(t)
	srv, err := server.New(server.Options{
		Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry(),
		Upstream: upstream.New(upstream.Options{BaseURL: c.simURL}), Checkpoints: c.checkpoints,
		Models: map[string]*server.ModelRuntime{"qwen3": mustRuntime(t, stack.ModelConfig{Name: "qwen3", Render: m, MaxModelLen: 32768})},
		Runs:   c.runs, Conversations: c.convs, Instance: name,
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &bgPod{srv: srv, url: hs.URL}
}

func (p *bgPod) do(t *testing.T, method, path, body string) (int, gjson.Result) {
	t.Helper()
	a := &apiStack{url: p.url}
	return a.do(t, method, path, body)
}

// sseEvent is one server-sent event.
type sseEvent struct {
	typ  string
	data gjson.Result
}

// openStream GETs path and returns a reader of its events.
func (p *bgPod) openStream(t *testing.T, ctx context.Context, method, path, body string) (*http.Response, func() (sseEvent, bool)) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<24)
	next := func() (sseEvent, bool) {
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.typ = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = gjson.Parse(strings.TrimPrefix(line, "data: "))
			case line == "" && ev.typ != "":
				return ev, true
			}
		}
		return ev, false
	}
	return resp, next
}

// readAll reads events until the stream ends.
func readAll(next func() (sseEvent, bool)) []sseEvent {
	var out []sseEvent
	for {
		ev, ok := next()
		if !ok {
			return out
		}
		out = append(out, ev)
	}
}

func checkSeqs(t *testing.T, evs []sseEvent, first int) {
	t.Helper()
	for i, ev := range evs {
		if got := int(ev.data.Get("sequence_number").Int()); got != first+i {
			t.Fatalf("event %d (%s) has sequence_number %d, want %d", i, ev.typ, got, first+i)
		}
	}
}

// TestBackgroundLifecycle: a background create answers at once; the stream replays every event
// from the store (from any replica), starting_after skips, GET reports the end, the response
// continues like any other, and cancelling a finished one returns it unchanged.
func TestBackgroundLifecycle(t *testing.T) {
	t.Parallel()
	c := newBGCluster(t, 0, nil)
	a, b := c.pod(t, "pod-a"), c.pod(t, "pod-b")
	st, resp := a.do(t, "POST", "/v1/responses", `{"model":"qwen3","input":"Hello there.","background":true}`)
	if st != 200 || !resp.Get("background").Bool() || (resp.Get("status").Str != "in_progress" && resp.Get("status").Str != "queued") {
		t.Fatalf("background create = %d %s", st, resp.Raw)
	}
	id := resp.Get("id").Str
	_, next := b.openStream(t, t.Context(), "GET", "/v1/responses/"+id+"?stream=true", "")
	evs := readAll(next)
	if len(evs) < 4 || evs[0].typ != "response.created" || evs[len(evs)-1].typ != "response.completed" {
		t.Fatalf("replayed %d events: first %v last %v", len(evs), evs[0].typ, evs[len(evs)-1].typ)
	}
	checkSeqs(t, evs, 0)
	_, next = a.openStream(t, t.Context(), "GET", "/v1/responses/"+id+"?stream=true&starting_after=2", "")
	rest := readAll(next)
	if len(rest) != len(evs)-3 {
		t.Fatalf("starting_after=2 gave %d events, want %d", len(rest), len(evs)-3)
	}
	checkSeqs(t, rest, 3)
	// The Go SDK's form: {"stream":true} in the body of the GET.
	_, next = b.openStream(t, t.Context(), "GET", "/v1/responses/"+id+"?starting_after="+strconv.Itoa(len(evs)-2), `{"stream":true}`)
	if tail := readAll(next); len(tail) != 1 || tail[0].typ != "response.completed" {
		t.Fatalf("tail = %v", tail)
	}
	st, got := b.do(t, "GET", "/v1/responses/"+id, "")
	if st != 200 || got.Get("status").Str != "completed" || !got.Get("background").Bool() || got.Get("output.#").Int() == 0 {
		t.Fatalf("GET = %d %s", st, got.Raw)
	}
	if st, cont := b.do(t, "POST", "/v1/responses", `{"model":"qwen3","previous_response_id":"`+id+`","input":"More."}`); st != 200 || cont.Get("status").Str != "completed" {
		t.Fatalf("continuation = %d %s", st, cont.Raw)
	}
	if st, again := b.do(t, "POST", "/v1/responses/"+id+"/cancel", ""); st != 200 || again.Get("status").Str != "completed" {
		t.Fatalf("cancel of a finished response = %d %s, want 200 completed", st, again.Raw)
	}
	// A streamed background create: the create's stream is the run's.
	_, next = a.openStream(t, t.Context(), "POST", "/v1/responses", `{"model":"qwen3","input":"Hi.","background":true,"stream":true}`)
	live := readAll(next)
	if len(live) < 3 || live[0].typ != "response.created" || live[len(live)-1].typ != "response.completed" {
		t.Fatalf("streamed background create: %d events", len(live))
	}
	checkSeqs(t, live, 0)
	// Deleting removes the run too.
	if st, _ := a.do(t, "DELETE", "/v1/responses/"+id, ""); st != 200 {
		t.Fatalf("delete = %d", st)
	}
	for _, p := range []string{"/v1/responses/" + id, "/v1/responses/" + id + "?stream=true"} {
		if st, body := b.do(t, "GET", p, ""); st != 404 {
			t.Errorf("GET %s after delete = %d %s", p, st, body.Raw)
		}
	}
	if st, body := a.do(t, "POST", "/v1/responses", `{"model":"qwen3","input":"x","background":true,"store":false}`); st != 400 || body.Get("error.param").Str != "background" {
		t.Errorf("background without store = %d %s", st, body.Raw)
	}
}

// TestBackgroundCancel: a cancel on another replica ends a running background response as
// cancelled; the owner stops, nothing is stored, and the response cannot be continued.
func TestBackgroundCancel(t *testing.T) {
	t.Parallel()
	c := newBGCluster(t, 20*time.Millisecond, nil)
	a, b := c.pod(t, "pod-a"), c.pod(t, "pod-b")
	for _, canceller := range []*bgPod{a, b} {
		st, resp := a.do(t, "POST", "/v1/responses", `{"model":"qwen3","input":"Tell me a long story.","background":true,"reasoning":{"effort":"none"}}`)
		if st != 200 {
			t.Fatalf("create = %d %s", st, resp.Raw)
		}
		id := resp.Get("id").Str
		_, next := b.openStream(t, t.Context(), "GET", "/v1/responses/"+id+"?stream=true", "")
		for { // until generation is under way
			ev, ok := next()
			if !ok {
				t.Fatal("stream ended before the first delta")
			}
			if ev.typ == "response.output_text.delta" {
				break
			}
		}
		st, got := canceller.do(t, "POST", "/v1/responses/"+id+"/cancel", "")
		if st != 200 || got.Get("status").Str != "cancelled" || got.Get("id").Str != id {
			t.Fatalf("cancel = %d %s", st, got.Raw)
		}
		rest := readAll(next) // the follower's stream ends, with the cancel's event
		for _, ev := range rest {
			if ev.typ == "response.completed" {
				t.Fatal("a cancelled response completed")
			}
		}
		if len(rest) == 0 || rest[len(rest)-1].typ != "error" || rest[len(rest)-1].data.Get("code").Str != "response_cancelled" {
			t.Fatalf("the follower's stream after the cancel: %v", rest)
		}
		if len(rest) > 1 {
			checkSeqs(t, rest, int(rest[0].data.Get("sequence_number").Int()))
		}
		if st, got := b.do(t, "GET", "/v1/responses/"+id, ""); st != 200 || got.Get("status").Str != "cancelled" {
			t.Fatalf("GET after cancel = %d %s", st, got.Raw)
		}
		if st, body := a.do(t, "POST", "/v1/responses", `{"model":"qwen3","previous_response_id":"`+id+`","input":"More."}`); st != 400 || body.Get("error.code").Str != "previous_response_not_found" {
			t.Fatalf("continuing a cancelled response = %d %s", st, body.Raw)
		}
		if st, again := b.do(t, "POST", "/v1/responses/"+id+"/cancel", ""); st != 200 || again.Get("status").Str != "cancelled" {
			t.Fatalf("second cancel = %d %s", st, again.Raw)
		}
	}
	// The owner's generation ends (its Shutdown waits for none).
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := a.srv.Shutdown(ctx); err != nil || ctx.Err() != nil {
		t.Fatalf("the cancelled generations did not end: %v %v", err, ctx.Err())
	}
}

// TestBackgroundOwnerDied: a run whose owner stopped renewing its lease (the pod died) reads as
// failed on every replica, and its stream ends with response.failed, never in_progress for ever.
func TestBackgroundOwnerDied(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	c := newBGCluster(t, 0, clock)
	b := c.pod(t, "pod-b")
	// What a pod that died after its first events left behind.
	created := `{"id":"resp_dead","object":"response","status":"in_progress","background":true,"output":[]}`
	ev := func(i int, typ string) []byte {
		return []byte("event: " + typ + "\ndata: {\"type\":\"" + typ + "\",\"sequence_number\":" + strconv.Itoa(i) + ",\"response\":" + created + "}\n\n")
	}
	if err := c.runs.Create(t.Context(), &store.Run{ID: "resp_dead", Tenant: middleware.DevTenant, Owner: "pod-a", Status: store.RunInProgress, Response: []byte(created)},
		[][]byte{ev(0, "response.created"), ev(1, "response.in_progress")}); err != nil {
		t.Fatal(err)
	}
	if st, got := b.do(t, "GET", "/v1/responses/resp_dead", ""); st != 200 || got.Get("status").Str != "in_progress" {
		t.Fatalf("GET within the lease = %d %s", st, got.Raw)
	}
	mu.Lock()
	now = now.Add(c.runs.Lease() + time.Second)
	mu.Unlock()
	st, got := b.do(t, "GET", "/v1/responses/resp_dead", "")
	if st != 200 || got.Get("status").Str != "failed" || got.Get("error.code").Str != "server_error" {
		t.Fatalf("GET past the lease = %d %s, want failed", st, got.Raw)
	}
	_, next := b.openStream(t, t.Context(), "GET", "/v1/responses/resp_dead?stream=true", "")
	evs := readAll(next)
	if len(evs) != 3 || evs[2].typ != "response.failed" || evs[2].data.Get("response.status").Str != "failed" {
		t.Fatalf("stream of a dead run: %v", evs)
	}
	checkSeqs(t, evs, 0)
	if st, got := b.do(t, "POST", "/v1/responses/resp_dead/cancel", ""); st != 200 || got.Get("status").Str != "failed" {
		t.Fatalf("cancel of a dead run = %d %s, want it failed", st, got.Raw)
	}
}

// TestBackgroundShutdown: a shutdown whose grace ends fails the background responses still
// running; they read failed afterwards.
func TestBackgroundShutdown(t *testing.T) {
	t.Parallel()
	c := newBGCluster(t, 20*time.Millisecond, nil)
	a := c.pod(t, "pod-a")
	st, resp := a.do(t, "POST", "/v1/responses", `{"model":"qwen3","input":"Tell me a long story.","background":true,"reasoning":{"effort":"none"}}`)
	if st != 200 {
		t.Fatalf("create = %d %s", st, resp.Raw)
	}
	id := resp.Get("id").Str
	_, next := a.openStream(t, t.Context(), "GET", "/v1/responses/"+id+"?stream=true", "")
	for {
		ev, ok := next()
		if !ok {
			t.Fatal("stream ended before the first delta")
		}
		if ev.typ == "response.output_text.delta" {
			break
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // no grace left
	if err := a.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	evs := readAll(next)
	if len(evs) == 0 || evs[len(evs)-1].typ != "response.failed" {
		t.Fatalf("stream after shutdown ended with %v", evs)
	}
	if st, got := a.do(t, "GET", "/v1/responses/"+id, ""); st != 200 || got.Get("status").Str != "failed" {
		t.Fatalf("GET after shutdown = %d %s", st, got.Raw)
	}
	if st, body := a.do(t, "POST", "/v1/responses", `{"model":"qwen3","input":"x","background":true}`); st != 503 {
		t.Fatalf("background create after shutdown = %d %s, want 503", st, body.Raw)
	}
}

// TestBackgroundEventCapGap: a response with more events than its log holds (MaxEvents 20
// here) replays its first 20 events, then the response.events_omitted marker numbered as the first
// event not logged, then its final events with their own numbers; starting_after resumes on
// either side of the gap, and within it at the final events.
func TestBackgroundEventCapGap(t *testing.T) {
	t.Parallel()
	c := newBGCluster(t, 0, nil)
	c.runs = store.NewRuns(store.MemoryRecords(nil), store.RunsOptions{MaxEvents: 20})
	a, b := c.pod(t, "pod-a"), c.pod(t, "pod-b")
	st, resp := a.do(t, "POST", "/v1/responses", `{"model":"qwen3","input":"Tell me a story.","background":true,"max_output_tokens":60,"reasoning":{"effort":"none"}}`)
	if st != 200 {
		t.Fatalf("create = %d %s", st, resp.Raw)
	}
	id := resp.Get("id").Str
	_, next := b.openStream(t, t.Context(), "GET", "/v1/responses/"+id+"?stream=true", "")
	evs := readAll(next)
	if len(evs) < 22 { // 20 logged, the marker, at least the terminal event
		t.Fatalf("%d events, want the 20 logged, the marker and the final ones", len(evs))
	}
	checkSeqs(t, evs[:21], 0)
	if evs[20].typ != store.EventsOmitted || evs[20].data.Get("first_omitted").Int() != 20 {
		t.Fatalf("event 20 = %s %s, want the %s marker", evs[20].typ, evs[20].data.Raw, store.EventsOmitted)
	}
	last := evs[len(evs)-1]
	if last.typ != "response.incomplete" && last.typ != "response.completed" {
		t.Fatalf("last event %s", last.typ)
	}
	finalSeq := int(last.data.Get("sequence_number").Int())
	firstFinal := int(evs[21].data.Get("sequence_number").Int())
	if firstFinal <= 21 {
		t.Fatalf("the first event after the gap is numbered %d: nothing was omitted", firstFinal)
	}
	checkSeqs(t, evs[21:], firstFinal)
	for _, p := range [][2]int{{18, 19}, {19, 20}, {20, firstFinal}, {firstFinal - 1, firstFinal}, {finalSeq - 1, finalSeq}} {
		after, want := p[0], p[1]
		_, next := a.openStream(t, t.Context(), "GET", "/v1/responses/"+id+"?stream=true&starting_after="+strconv.Itoa(after), "")
		got := readAll(next)
		if len(got) == 0 || int(got[0].data.Get("sequence_number").Int()) != want || got[len(got)-1].typ != last.typ {
			t.Fatalf("starting_after=%d: %d events, first %v; want from %d to the end", after, len(got), got, want)
		}
	}
}

// TestBackgroundCancelLosesToSettle: a cancel that meets a run its owner is storing (settling)
// does not cancel it: it answers the run's end once the owner records it. (Whether the cancel
// reaches the store before or after the finish, the answer must be the finish.)
func TestBackgroundCancelLosesToSettle(t *testing.T) {
	t.Parallel()
	c := newBGCluster(t, 0, nil)
	b := c.pod(t, "pod-b")
	ctx := t.Context()
	created := `{"id":"resp_settling","object":"response","status":"in_progress","background":true,"output":[]}`
	if err := c.runs.Create(ctx, &store.Run{ID: "resp_settling", Tenant: middleware.DevTenant, Owner: "pod-a", Status: store.RunInProgress, Response: []byte(created)}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.runs.Settle(ctx, middleware.DevTenant, "resp_settling", nil); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		st   int
		body gjson.Result
	}
	done := make(chan answer, 1)
	go func() {
		a := &apiStack{url: b.url}
		st, body := a.do(t, "POST", "/v1/responses/resp_settling/cancel", "")
		done <- answer{st, body}
	}()
	completed := `{"id":"resp_settling","object":"response","status":"completed","background":true,"output":[]}`
	if _, err := c.runs.Finish(ctx, middleware.DevTenant, "resp_settling", store.RunCompleted, []byte(completed), nil); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got.st != 200 || got.body.Get("status").Str != "completed" {
		t.Fatalf("cancel of a settling run = %d %s, want its end (completed)", got.st, got.body.Raw)
	}
	if st, got := b.do(t, "GET", "/v1/responses/resp_settling", ""); st != 200 || got.Get("status").Str != "completed" {
		t.Fatalf("GET = %d %s", st, got.Raw)
	}
}
