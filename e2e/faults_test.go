package e2e

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"testing"
)

// TestUpstreamFailures puts serve in front of faulty sims: one that answers every generation
// with HTTP 500 (--fail-rate 1) and one that cuts every generation after a few tokens
// (--drop-rate 1). A client must always learn that the turn failed: an OpenAI error object
// with a 5xx status before the first SSE byte, or a stream ending in response.failed with
// response.error{code,message} — never a stream that just stops (SDKs then report success).
func TestUpstreamFailures(t *testing.T) {
	st := requireStack(t)
	if st.bin == "" {
		t.Skip("external stack (STITCH_E2E_BASE_URL): cannot start faulty sims")
	}
	faults := []struct {
		name  string
		flags []string
	}{
		{"sim_500", []string{"--fail-rate", "1"}},
		{"sim_drops_connection", []string{"--drop-rate", "1", "--drop-after", "3"}},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			procs := newExtraProcs(t)
			sim := procs.start("faulty sim", func() (*proc, error) { return st.startSim(f.flags...) })
			serve := procs.start("serve", func() (*proc, error) { return st.startServe(sim.addr, t.TempDir()) })
			faulty := &stack{baseURL: "http://" + serve.addr}
			ctx := testContext(t)

			body := mustJSON(t, map[string]any{"model": modelName, "input": "This turn will fail."})
			status, _, b := faulty.doRaw(t, ctx, http.MethodPost, "/v1/responses", body, nil)
			checkFailedTurn(t, status, b)

			body = mustJSON(t, map[string]any{"model": modelName, "input": "This stream will fail.", "stream": true})
			status, hdr, b := faulty.doRaw(t, ctx, http.MethodPost, "/v1/responses", body, http.Header{"Accept": {"application/json"}})
			if status != http.StatusOK {
				if status < 500 {
					t.Errorf("stream: status %d before streaming, want 5xx; body %s", status, b)
				}
				decodeAPIError(t, b)
				return
			}
			if mt, _, _ := mime.ParseMediaType(hdr.Get("Content-Type")); mt != "text/event-stream" {
				t.Fatalf("stream: 200 with Content-Type %q, want text/event-stream", hdr.Get("Content-Type"))
			}
			events, err := parseSSE(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("parse SSE: %v", err)
			}
			res := checkStream(t, events)
			if res.Terminal != "response.failed" {
				t.Errorf("stream ended with %s, want response.failed", res.Terminal)
			}
		})
	}
}

// checkFailedTurn accepts the two ways a non-stream turn may fail: an OpenAI error object
// with a 5xx status, or a 200 response object with status "failed" and error{code,message}
// (what a stream's response.failed carries). Anything else hides the failure.
func checkFailedTurn(t *testing.T, status int, b []byte) {
	t.Helper()
	if status >= 500 {
		if typ, _, _, msg := decodeAPIError(t, b); typ == "" || msg == "" {
			t.Errorf("non-stream: %d error without type or message: %s", status, b)
		}
		return
	}
	var r wireResponse
	if err := json.Unmarshal(b, &r); status != http.StatusOK || err != nil || r.Status != "failed" {
		t.Errorf("non-stream: %d %s, want 5xx or a response with status failed", status, b)
		return
	}
	var e struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(r.Error, &e); err != nil || e.Code == "" || e.Message == "" {
		t.Errorf("non-stream: failed response needs error{code,message}, got %s", r.Error)
	}
	t.Logf("non-stream failure reported as a 200 response with status failed (%s)", r.Error)
}
