package e2e

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// TestModelsPassThrough checks that vLLM's /v1/models reaches clients through stitch.
func TestModelsPassThrough(t *testing.T) {
	st := requireStack(t)
	c := st.client()
	page, err := c.Models.List(testContext(t))
	if err != nil {
		t.Fatalf("Models.List: %v", err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if !slices.Contains(ids, modelName) {
		t.Errorf("Models.List ids = %q, want %q among them", ids, modelName)
	}
	status, _, b := st.doRaw(t, testContext(t), http.MethodGet, "/v1/models", nil, nil)
	var list struct {
		Object string `json:"object"`
	}
	if err := json.Unmarshal(b, &list); status != http.StatusOK || err != nil || list.Object != "list" {
		t.Errorf("GET /v1/models = %d %s, want 200 with object list", status, b)
	}
}

// TestServeRestart checks that stored responses survive a restart of serve on the same data
// dir (the embedded checkpoint store) and that SIGTERM shuts serve down cleanly. It runs its
// own serve processes in front of the shared sim.
func TestServeRestart(t *testing.T) {
	st := requireStack(t)
	if st.bin == "" {
		t.Skip("external stack (STITCH_E2E_BASE_URL): cannot restart it")
	}
	dataDir := t.TempDir()
	procs := newExtraProcs(t)
	start := func() *proc {
		t.Helper()
		return procs.start("serve", func() (*proc, error) { return st.startServe(st.simAddr, dataDir) })
	}

	p1 := start()
	c1 := newClient("http://" + p1.addr)
	ctx := testContext(t)
	r1, err := c1.Responses.New(ctx, responses.ResponseNewParams{Model: modelName,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Remember this across a restart.")}})
	if err != nil {
		t.Fatalf("Responses.New: %v", err)
	}
	if err := p1.stop(); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
	if code := p1.exitCode(); code != 0 {
		t.Errorf("serve exit code after SIGTERM = %d, want 0", code)
	}

	p2 := start()
	c2 := newClient("http://" + p2.addr)
	got, err := c2.Responses.Get(ctx, r1.ID, responses.ResponseGetParams{})
	if err != nil {
		t.Fatalf("Get(%s) after restart: %v", r1.ID, err)
	}
	if got.OutputText() != r1.OutputText() {
		t.Errorf("Get after restart text = %q, want %q", got.OutputText(), r1.OutputText())
	}
	page, err := c2.Responses.InputItems.List(ctx, r1.ID, responses.InputItemListParams{})
	if err != nil || len(page.Data) != 1 {
		t.Errorf("input_items after restart = %v items, err %v; want 1", page, err)
	}
	r2, err := c2.Responses.New(ctx, responses.ResponseNewParams{Model: modelName, PreviousResponseID: openai.String(r1.ID),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Still with me?")}})
	if err != nil {
		t.Fatalf("continuation after restart: %v", err)
	}
	checkCompleted(t, decodeResponse(t, r2.RawJSON()))
	if r2.PreviousResponseID != r1.ID {
		t.Errorf("previous_response_id = %q, want %q", r2.PreviousResponseID, r1.ID)
	}
}
