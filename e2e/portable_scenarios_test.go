package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stitchllm/stitch/store"
)

// TestPortable drives two Redis-backed pods through the scenarios of issue 7. Every turn's prompt
// ids (as the sim received them) are compared with a single-pod reference run of the same
// script: whichever pod serves a turn, and whatever happened to the artifact, the model sees the
// same ids. Each turn's artifact outcome is read from the serving pod's /metrics.
func TestPortable(t *testing.T) {
	cl := startPortableCluster(t)
	n := len(cl.script.Turns)
	if n < 4 {
		t.Fatalf("script has %d turns, the scenarios need 4", n)
	}
	onA := func(int) *ptPod { return cl.a }
	ref := cl.runScript(t, keyAcme, nil, 0, n, onA)
	for i, tr := range ref {
		want := "hit_local"
		if i == 0 {
			want = "new"
		}
		if tr.outcome != want {
			t.Errorf("reference turn %d on pod A: outcome %s, want %s", i, tr.outcome, want)
		}
		if tr.salt == "" {
			t.Errorf("reference turn %d: no cache_salt sent upstream", i)
		}
	}

	t.Run("alternating_pods", func(t *testing.T) { testAlternatingPods(t, cl, ref) })
	t.Run("tenants", func(t *testing.T) { testTenants(t, cl, ref) })
	t.Run("tampered_foreign_expired_artifact", func(t *testing.T) { testBadArtifacts(t, cl, ref) })
	t.Run("pod_killed_and_restarted", func(t *testing.T) { testPodRestart(t, cl, ref) })
	t.Run("codex_replay", func(t *testing.T) { testCodexReseed(t, cl) })
	t.Run("exact_mode", func(t *testing.T) { testExactModePods(t, cl) })
	t.Run("artifact_ttl_flag", func(t *testing.T) { testArtifactTTLFlag(t, cl) })
	t.Run("redis_down", func(t *testing.T) { testRedisDown(t, cl, ref) })

	// Zero lost stored responses: every response a pod reported stored (completed with store
	// true) reads back on both pods, after pod kills and a Redis outage.
	total := 0
	for key, ids := range cl.stored {
		for _, id := range ids {
			for _, p := range []*ptPod{cl.a, cl.b} {
				status, _, b := ptDo(t, p, http.MethodGet, "/v1/responses/"+id, key, nil)
				var r ptResponse
				if status != http.StatusOK || json.Unmarshal(b, &r) != nil || r.ID != id || r.Status != "completed" {
					t.Errorf("stored response %s lost: GET on pod %s = %d %.200s", id, p.name, status, b)
				}
			}
			total++
		}
	}
	for _, p := range []*ptPod{cl.a, cl.b} {
		if got := scrapeCounter(t, p, "stitch_audit_mismatch_total", "")[""]; got != 0 {
			t.Errorf("pod %s: stitch_audit_mismatch_total = %g, want 0", p.name, got)
		}
		outcomes := resolutions(t, p)
		if outcomes["hit_portable"] == 0 {
			t.Errorf("pod %s: no hit_portable outcome counted", p.name)
		}
		t.Logf("pod %s artifact outcomes since its last start: %v", p.name, outcomes)
	}
	t.Logf("%d stored responses read back on both pods; outcomes of all %d turns: %v", total, cl.turns, cl.tally)
}

// testAlternatingPods plays the script with turns alternating between the pods: every
// continuation lands on the pod that did not serve the previous turn and resolves hit_portable.
func testAlternatingPods(t *testing.T, cl *ptCluster, ref []ptTurn) {
	alt := cl.runScript(t, keyAcme, nil, 0, len(ref), func(i int) *ptPod { return [2]*ptPod{cl.a, cl.b}[i%2] })
	for i, tr := range alt {
		want := "hit_portable"
		if i == 0 {
			want = "new"
		}
		if tr.outcome != want {
			t.Errorf("turn %d: outcome %s, want %s", i, tr.outcome, want)
		}
		samePrompt(t, fmt.Sprintf("turn %d", i), tr.prompt, ref[i].prompt)
		if tr.salt != ref[i].salt {
			t.Errorf("turn %d: cache_salt %q, want the tenant's %q on every pod", i, tr.salt, ref[i].salt)
		}
	}
}

// testTenants checks that another tenant's response id behaves exactly like an unknown one, that
// missing and unknown keys get 401, that cache salts are per tenant, and that a rewritten
// --api-keys file takes effect without a restart.
func testTenants(t *testing.T, cl *ptCluster, ref []ptTurn) {
	acmeID := ref[len(ref)-1].resp.ID
	const unknownID = "resp_0123456789abcdef0123456789abcdef0123456789abcdef"
	pods := []*ptPod{cl.a, cl.b}
	for _, p := range pods {
		// The same request with acme's id and with an id nobody has: the answers must be the
		// same but for the id itself.
		probe := func(method, path string, body func(id string) []byte) {
			t.Helper()
			var bodies [2][]byte
			var status [2]int
			for i, id := range []string{acmeID, unknownID} {
				var req []byte
				if body != nil {
					req = body(id)
				}
				status[i], _, bodies[i] = ptDo(t, p, method, strings.ReplaceAll(path, "ID", id), keyGlobex, req)
			}
			foreign := strings.ReplaceAll(string(bodies[0]), acmeID, "ID")
			unknown := strings.ReplaceAll(string(bodies[1]), unknownID, "ID")
			if status[0] != status[1] || foreign != unknown {
				t.Errorf("pod %s: %s %s as globex: another tenant's id answers %d %s, an unknown id %d %s",
					p.name, method, path, status[0], bodies[0], status[1], bodies[1])
			}
		}
		cont := func(id string) []byte {
			return mustJSON(t, map[string]any{"model": modelName, "input": "Continue.", "previous_response_id": id})
		}
		probe(http.MethodPost, "/v1/responses", cont)
		probe(http.MethodGet, "/v1/responses/ID", nil)
		probe(http.MethodGet, "/v1/responses/ID/input_items", nil)
		probe(http.MethodDelete, "/v1/responses/ID", nil)

		status, _, b := ptDo(t, p, http.MethodPost, "/v1/responses", keyGlobex, cont(acmeID))
		checkAPIError(t, "globex continuing acme's response", status, b, http.StatusBadRequest, "previous_response_not_found", "previous_response_id")
		status, _, b = ptDo(t, p, http.MethodGet, "/v1/responses/"+acmeID, keyGlobex, nil)
		checkAPIError(t, "globex GET of acme's response", status, b, http.StatusNotFound, "", "")
		status, _, b = ptDo(t, p, http.MethodDelete, "/v1/responses/"+acmeID, keyGlobex, nil)
		checkAPIError(t, "globex DELETE of acme's response", status, b, http.StatusNotFound, "", "")

		for _, key := range []string{"", "sk-nobody-has-this-key"} {
			status, _, b := ptDo(t, p, http.MethodGet, "/v1/responses/"+acmeID, key, nil)
			checkAPIError(t, fmt.Sprintf("pod %s: GET with key %q", p.name, key), status, b, http.StatusUnauthorized, "invalid_api_key", "")
			status, _, b = ptDo(t, p, http.MethodPost, "/v1/responses", key, cont(acmeID))
			checkAPIError(t, fmt.Sprintf("pod %s: POST with key %q", p.name, key), status, b, http.StatusUnauthorized, "invalid_api_key", "")
		}
	}
	// acme's response is intact, on both pods, and still continues.
	for _, p := range pods {
		status, _, b := ptDo(t, p, http.MethodGet, "/v1/responses/"+acmeID, keyAcme, nil)
		var r ptResponse
		if status != http.StatusOK || json.Unmarshal(b, &r) != nil || r.ID != acmeID || r.Status != "completed" {
			t.Errorf("pod %s: acme GET of its own response after globex's attempts = %d %.300s", p.name, status, b)
		}
	}

	// Per-tenant cache_salt: globex's first turn has acme's prompt ids but its own salt, the same
	// on both pods.
	g0 := cl.post(t, cl.b, keyGlobex, cl.scriptRequest(t, 0, nil)).mustComplete(t, "globex turn 0 on B")
	samePrompt(t, "globex turn 0", g0.prompt, ref[0].prompt)
	g1 := cl.post(t, cl.a, keyGlobex, cl.scriptRequest(t, 1, &g0)).mustComplete(t, "globex turn 1 on A")
	samePrompt(t, "globex turn 1", g1.prompt, ref[1].prompt)
	if g1.outcome != "hit_portable" {
		t.Errorf("globex turn 1 on A: outcome %s, want hit_portable", g1.outcome)
	}
	if g0.salt == "" || g0.salt == ref[0].salt || g1.salt != g0.salt {
		t.Errorf("cache_salt: globex %q then %q, acme %q; want one non-empty salt per tenant", g0.salt, g1.salt, ref[0].salt)
	}
	// acme deletes a response through one pod: the other pod (which stored nothing of it
	// locally) and the pod itself both answer 404 afterwards.
	d0 := cl.post(t, cl.a, keyAcme, cl.scriptRequest(t, 0, nil)).mustComplete(t, "acme turn to delete")
	cl.stored[keyAcme] = slices.DeleteFunc(cl.stored[keyAcme], func(id string) bool { return id == d0.resp.ID })
	if status, _, b := ptDo(t, cl.b, http.MethodDelete, "/v1/responses/"+d0.resp.ID, keyAcme, nil); status != http.StatusOK {
		t.Errorf("acme DELETE on B of a response A served = %d %s, want 200", status, b)
	}
	for _, p := range pods {
		status, _, b := ptDo(t, p, http.MethodGet, "/v1/responses/"+d0.resp.ID, keyAcme, nil)
		checkAPIError(t, "pod "+p.name+": GET of a deleted response", status, b, http.StatusNotFound, "", "")
	}

	// Key rotation: globex's key is replaced (and a third tenant added) in the file the pods
	// watch. The reload is checked at most once per second, so poll with a deadline.
	cl.writeKeys(t, map[string]string{keyAcme: tenantAcme, keyGlobexRotated: tenantGlobex, "sk-initech-e2e": "initech"})
	for _, p := range pods {
		deadline := time.Now().Add(portablePoll)
		for {
			status, _, b := ptDo(t, p, http.MethodGet, "/v1/responses/"+g1.resp.ID, keyGlobexRotated, nil)
			if status == http.StatusOK {
				break
			}
			if status != http.StatusUnauthorized || time.Now().After(deadline) {
				t.Fatalf("pod %s: rotated globex key not accepted: %d %s", p.name, status, b)
			}
			time.Sleep(50 * time.Millisecond)
		}
		status, _, b := ptDo(t, p, http.MethodGet, "/v1/responses/"+g1.resp.ID, keyGlobex, nil)
		checkAPIError(t, "pod "+p.name+": GET with globex's removed key", status, b, http.StatusUnauthorized, "invalid_api_key", "")
	}
	// The stored responses of globex are read back with its current key.
	cl.globexKey = keyGlobexRotated
	cl.stored[keyGlobexRotated] = append(cl.stored[keyGlobexRotated], cl.stored[keyGlobex]...)
	delete(cl.stored, keyGlobex)
}

// testBadArtifacts overwrites the Redis artifact of a response served by pod A, then continues it
// on pod B (whose L1 never held it): flipped bytes, a value sealed with a key the pods do not
// have and one sealed (with the pods' key) for another tenant resolve invalid, a value re-sealed with the pods' key but a past expiry resolves expired,
// and the same value with a future expiry resolves hit_portable (so the forgery is exactly what
// a pod writes). Every branch is a 200 with the reference run's ids.
func testBadArtifacts(t *testing.T, cl *ptCluster, ref []ptTurn) {
	ctx := t.Context()
	first := cl.post(t, cl.a, keyAcme, cl.scriptRequest(t, 0, nil)).mustComplete(t, "turn 0 on A")
	key := artifactKey(tenantAcme, first.resp.ID)
	orig, err := cl.rdb.Get(ctx, key).Bytes()
	if err != nil {
		t.Fatalf("read artifact %s from Redis: %v", key, err)
	}
	art, err := cl.sealer.OpenArtifact(tenantAcme, orig)
	if err != nil {
		t.Fatalf("open the stored artifact with the pods' seal keys: %v", err)
	}
	foreignSealer, err := store.NewSealer([]store.SealKey{{ID: "k1", Secret: []byte("a-key-no-pod-has-0123456789abcdef")}}, store.SealerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// resealAs seals the stored artifact again as a pod would, for tenant, expiring at expires.
	resealAs := func(s *store.Sealer, tenant string, expires time.Time) []byte {
		a := *art
		a.Tenant, a.ExpiresAt = tenant, expires
		b, err := s.SealArtifact(&a)
		if err != nil {
			t.Fatalf("seal artifact: %v", err)
		}
		return b
	}
	reseal := func(s *store.Sealer, expires time.Time) []byte { return resealAs(s, tenantAcme, expires) }
	flipped := slices.Clone(orig)
	flipped[len(flipped)/2] ^= 0x5a
	cases := []struct {
		name    string
		value   []byte
		outcome string
	}{
		{"flipped_bytes", flipped, "invalid"},
		{"foreign_seal_key", reseal(foreignSealer, time.Now().Add(time.Hour)), "invalid"},
		{"sealed_for_other_tenant", resealAs(cl.sealer, tenantGlobex, time.Now().Add(time.Hour)), "invalid"},
		{"past_expiry", reseal(cl.sealer, time.Now().Add(-time.Hour)), "expired"},
		{"resealed_valid", reseal(cl.sealer, time.Now().Add(time.Hour)), "hit_portable"},
	}
	for _, c := range cases {
		if err := cl.rdb.Set(ctx, key, c.value, time.Hour).Err(); err != nil {
			t.Fatalf("%s: write artifact: %v", c.name, err)
		}
		tr := cl.post(t, cl.b, keyAcme, cl.scriptRequest(t, 1, &first)).mustComplete(t, c.name+": turn 1 on B")
		if tr.outcome != c.outcome {
			t.Errorf("%s: outcome %s, want %s", c.name, tr.outcome, c.outcome)
		}
		samePrompt(t, c.name, tr.prompt, ref[1].prompt)
	}
}

// testPodRestart kills pod A (SIGKILL) mid-conversation and restarts it with the same flags and
// data dir: the next turn on A resolves from Redis with the reference ids, and every earlier
// response reads back on both pods.
func testPodRestart(t *testing.T, cl *ptCluster, ref []ptTurn) {
	turns := cl.runScript(t, keyAcme, nil, 0, 2, func(i int) *ptPod { return [2]*ptPod{cl.a, cl.b}[i%2] })
	cl.killPod(t, cl.a)
	cl.startPod(t, cl.a)
	t2 := cl.post(t, cl.a, keyAcme, cl.scriptRequest(t, 2, &turns[1])).mustComplete(t, "turn 2 on restarted A")
	if t2.outcome != "hit_portable" {
		t.Errorf("turn 2 on restarted A: outcome %s, want hit_portable", t2.outcome)
	}
	samePrompt(t, "turn 2 after the restart", t2.prompt, ref[2].prompt)
	t3 := cl.post(t, cl.a, keyAcme, cl.scriptRequest(t, 3, &t2)).mustComplete(t, "turn 3 on A")
	if t3.outcome != "hit_local" {
		t.Errorf("turn 3 on A: outcome %s, want hit_local", t3.outcome)
	}
	samePrompt(t, "turn 3 after the restart", t3.prompt, ref[3].prompt)
	for _, tr := range append(turns, t2, t3) {
		for _, p := range []*ptPod{cl.a, cl.b} {
			if status, _, b := ptDo(t, p, http.MethodGet, "/v1/responses/"+tr.resp.ID, keyAcme, nil); status != http.StatusOK {
				t.Errorf("GET %s on pod %s after the restart = %d %s", tr.resp.ID, p.name, status, b)
			}
		}
	}
}

// testRedisDown stops Redis mid-conversation (after a SAVE, as a Redis with persistence would
// keep its data), checks the degraded answers, restarts Redis on the same port and checks that
// both pods recover without a restart.
func testRedisDown(t *testing.T, cl *ptCluster, ref []ptTurn) {
	turns := cl.runScript(t, keyAcme, nil, 0, 2, func(i int) *ptPod { return [2]*ptPod{cl.a, cl.b}[i%2] })
	last := &turns[1] // served by B; A never saw it
	if err := cl.rdb.Save(t.Context()).Err(); err != nil {
		t.Fatalf("redis SAVE: %v", err)
	}
	cl.redis.Stop()
	restarted := false
	defer func() {
		if !restarted { // a failed check above: later checks need Redis back
			cl.redis.Restart()
		}
	}()

	// B continues from its local checkpoint. store:false, since a new stored response could not
	// reach the other pods.
	req := cl.scriptRequest(t, 2, last)
	req["store"] = false
	local := cl.post(t, cl.b, keyAcme, req).mustComplete(t, "Redis down: turn 2 on B (served turn 1)")
	if local.outcome != "hit_local" {
		t.Errorf("Redis down: turn 2 on B: outcome %s, want hit_local", local.outcome)
	}
	samePrompt(t, "Redis down: turn 2 on B", local.prompt, ref[2].prompt)
	if status, _, b := ptDo(t, cl.b, http.MethodGet, "/v1/responses/"+last.resp.ID, keyAcme, nil); status != http.StatusOK {
		t.Errorf("Redis down: GET on B of the response B served = %d %s, want 200 (local copy)", status, b)
	}

	// A has no copy of the checkpoint: 503 with Retry-After, never a wrong answer.
	status, hdr, b := ptDo(t, cl.a, http.MethodPost, "/v1/responses", keyAcme, mustJSON(t, cl.scriptRequest(t, 2, last)))
	checkAPIError(t, "Redis down: turn 2 on A (never saw turn 1)", status, b, http.StatusServiceUnavailable, "store_unavailable", "")
	if hdr.Get("Retry-After") == "" {
		t.Errorf("Redis down: 503 without Retry-After")
	}
	// Reads and deletes on A cannot know either: 503, never a 404 that would claim the response
	// does not exist.
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		status, hdr, b := ptDo(t, cl.a, method, "/v1/responses/"+last.resp.ID, keyAcme, nil)
		checkAPIError(t, "Redis down: "+method+" on A", status, b, http.StatusServiceUnavailable, "store_unavailable", "")
		if status == http.StatusServiceUnavailable && hdr.Get("Retry-After") == "" {
			t.Errorf("Redis down: %s on A: 503 without Retry-After", method)
		}
	}

	// B restarted while Redis is down: its L1 is empty, its local checkpoint is not, so the
	// continuation is a full render with the same ids.
	cl.killPod(t, cl.b)
	cl.startPod(t, cl.b)
	full := cl.post(t, cl.b, keyAcme, req).mustComplete(t, "Redis down: turn 2 on restarted B")
	if full.outcome != "miss" {
		t.Errorf("Redis down: turn 2 on restarted B: outcome %s, want miss", full.outcome)
	}
	samePrompt(t, "Redis down: turn 2 on restarted B", full.prompt, ref[2].prompt)

	// A stored continuation on B completes: B keeps it locally and queues it for Redis, so no
	// response is lost while Redis is down; other pods see it once B replays the queue.
	stored := cl.post(t, cl.b, keyAcme, cl.scriptRequest(t, 2, last))
	stored.mustComplete(t, "Redis down: stored turn on B")
	if status, _, b := ptDo(t, cl.b, http.MethodGet, "/v1/responses/"+stored.resp.ID, keyAcme, nil); status != http.StatusOK {
		t.Errorf("Redis down: GET on B of its queued response = %d %s, want 200 from its local copy", status, b)
	}

	cl.redis.Restart()
	restarted = true
	// Recovery without restarting the pods: A answers for the checkpoint only Redis has.
	deadline := time.Now().Add(portablePoll)
	for {
		status, _, b := ptDo(t, cl.a, http.MethodGet, "/v1/responses/"+last.resp.ID, keyAcme, nil)
		if status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Redis back: GET on A still %d %s after %v", status, b, portablePoll)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t2 := cl.post(t, cl.a, keyAcme, cl.scriptRequest(t, 2, last)).mustComplete(t, "Redis back: turn 2 on A")
	if t2.outcome != "hit_portable" {
		t.Errorf("Redis back: turn 2 on A: outcome %s, want hit_portable", t2.outcome)
	}
	samePrompt(t, "Redis back: turn 2 on A", t2.prompt, ref[2].prompt)
	// B, restarted during the outage, may answer 503 (with Retry-After) a moment longer: after a
	// pool's worth of failed dials go-redis stops dialing and probes Redis once a second. Retry
	// as a client would (store:false, so the probes leave nothing behind), then take the turn.
	probe := cl.scriptRequest(t, 3, &t2)
	probe["store"] = false
	for deadline := time.Now().Add(portablePoll); ; time.Sleep(50 * time.Millisecond) {
		status, _, b := ptDo(t, cl.b, http.MethodPost, "/v1/responses", keyAcme, mustJSON(t, probe))
		if status == http.StatusOK {
			break
		}
		if status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("Redis back: turn 3 on B = %d %s", status, b)
		}
	}
	t3 := cl.post(t, cl.b, keyAcme, cl.scriptRequest(t, 3, &t2)).mustComplete(t, "Redis back: turn 3 on B")
	// The probe above already brought A's artifact from Redis into B's L1.
	if t3.outcome != "hit_local" && t3.outcome != "hit_portable" {
		t.Errorf("Redis back: turn 3 on B: outcome %s, want hit_local (after the probe) or hit_portable", t3.outcome)
	}
	samePrompt(t, "Redis back: turn 3 on B", t3.prompt, ref[3].prompt)
	// B's background sync (store.Fallback) replays the response it queued during the outage;
	// A sees it once that has run.
	for deadline := time.Now().Add(portablePoll); ; time.Sleep(50 * time.Millisecond) {
		status, _, b := ptDo(t, cl.a, http.MethodGet, "/v1/responses/"+stored.resp.ID, keyAcme, nil)
		if status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("Redis back: GET on A of B's queued response = %d %s after %v, want 200 (replayed)", status, b, portablePoll)
			break
		}
	}
}

// testCodexReseed replays a Codex CLI conversation (store:false, full history, reasoning with
// content null and encrypted_content) to the other pod: the sealed blob resolves the first
// turn's artifact through Redis. A tampered blob, another tenant's replay and a blob past its
// expiry are ignored (full render, same ids); a blob forged with the pods' key and a future
// expiry is honoured, which proves the expired one failed for its expiry alone.
func testCodexReseed(t *testing.T, cl *ptCluster) {
	shell := map[string]any{"type": "function", "name": "shell", "description": "Runs a shell command.", "strict": false,
		"parameters": map[string]any{"type": "object", "required": []string{"command"},
			"properties": map[string]any{"command": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}}}
	request := func(input []any) map[string]any {
		return map[string]any{
			"model": modelName, "store": false, "stream": true, "include": []string{"reasoning.encrypted_content"},
			"prompt_cache_key": "e2e-portable-codex", "tool_choice": "auto", "parallel_tool_calls": false,
			"tools": []any{shell}, "input": input,
		}
	}
	history := []any{
		map[string]any{"type": "message", "role": "developer", "content": []any{
			map[string]any{"type": "input_text", "text": "You are a coding agent running in a terminal."}}},
		map[string]any{"type": "message", "role": "user", "content": []any{
			map[string]any{"type": "input_text", "text": "List the repository with the shell tool."}}},
	}
	first := cl.post(t, cl.a, keyAcme, request(history)).mustComplete(t, "codex turn 1 on A")
	reasoning, _ := first.resp.item(t, "reasoning")
	call, callRaw := first.resp.item(t, "function_call")
	if reasoning.EncryptedContent == nil || *reasoning.EncryptedContent == "" {
		t.Fatalf("codex turn 1: reasoning item without encrypted_content")
	}
	replay := func(blob string) []any {
		return append(slices.Clone(history),
			map[string]any{"type": "reasoning", "id": reasoning.ID, "summary": []any{}, "content": nil, "encrypted_content": blob},
			json.RawMessage(callRaw),
			map[string]any{"type": "function_call_output", "call_id": call.CallID, "output": "README.md\nmain.go\ngo.mod"})
	}
	good := cl.post(t, cl.b, keyAcme, request(replay(*reasoning.EncryptedContent))).mustComplete(t, "codex replay on B")
	if good.outcome != "hit_portable" {
		t.Errorf("codex replay on the other pod: outcome %s, want hit_portable", good.outcome)
	}

	forge := func(expires time.Time) string {
		b, err := cl.sealer.SealPrivate(tenantAcme, "reseed", []byte(first.resp.ID+"\x00"+reasoning.ID), expires)
		if err != nil {
			t.Fatal(err)
		}
		return "stitch1:" + base64.RawURLEncoding.EncodeToString(b)
	}
	blob := *reasoning.EncryptedContent
	mid := len(blob) / 2
	swap := byte('A')
	if blob[mid] == 'A' {
		swap = 'B'
	}
	tampered := blob[:mid] + string(swap) + blob[mid+1:]
	cases := []struct {
		name     string
		pod      *ptPod
		key      string
		blob     string
		outcomes []string
	}{
		{"tampered_blob", cl.b, keyAcme, tampered, []string{"new"}},
		{"other_tenant", cl.a, cl.globexKey, blob, []string{"new"}},
		{"expired_blob", cl.b, keyAcme, forge(time.Now().Add(-time.Minute)), []string{"new"}},
		{"forged_valid_blob", cl.b, keyAcme, forge(time.Now().Add(time.Hour)), []string{"hit_local", "hit_portable"}},
	}
	for _, c := range cases {
		tr := cl.post(t, c.pod, c.key, request(replay(c.blob))).mustComplete(t, c.name)
		if !slices.Contains(c.outcomes, tr.outcome) {
			t.Errorf("%s: outcome %s, want one of %v", c.name, tr.outcome, c.outcomes)
		}
		samePrompt(t, c.name, tr.prompt, good.prompt)
	}
}

// testExactModePods runs the script on two more pods in exact mode (the history frozen as prompt
// plus generated ids): alternating turns resolve hit_portable with the ids of a single-pod exact
// run, and a continuation whose artifact was deleted from Redis is rebuilt from the shared
// checkpoints with the same ids.
func testExactModePods(t *testing.T, cl *ptCluster) {
	c := cl.newPod(t, "C", "--mode", "exact")
	d := cl.newPod(t, "D", "--mode", "exact")
	n := len(cl.script.Turns)
	ref := cl.runScript(t, keyAcme, nil, 0, n, func(int) *ptPod { return c })
	alt := cl.runScript(t, keyAcme, nil, 0, n, func(i int) *ptPod { return [2]*ptPod{c, d}[i%2] })
	for i, tr := range alt {
		want := "hit_portable"
		if i == 0 {
			want = "new"
		}
		if tr.outcome != want {
			t.Errorf("exact turn %d: outcome %s, want %s", i, tr.outcome, want)
		}
		samePrompt(t, fmt.Sprintf("exact turn %d", i), tr.prompt, ref[i].prompt)
	}
	// The reference's turn 1 (served by C, never seen by D) without its artifact: D rebuilds the
	// frozen history from the shared checkpoints.
	if err := cl.rdb.Del(t.Context(), artifactKey(tenantAcme, ref[1].resp.ID)).Err(); err != nil {
		t.Fatalf("delete artifact: %v", err)
	}
	tr := cl.post(t, d, keyAcme, cl.scriptRequest(t, 2, &ref[1])).mustComplete(t, "exact turn 2 without its artifact")
	if tr.outcome != "miss" {
		t.Errorf("exact turn 2 without its artifact: outcome %s, want miss", tr.outcome)
	}
	samePrompt(t, "exact turn 2 rebuilt from checkpoints", tr.prompt, ref[2].prompt)
}

// testArtifactTTLFlag checks that --artifact-ttl bounds what a pod writes: the Redis TTL of an
// artifact, the expiry sealed inside it and the expiry of a reseed blob. (What happens past an
// expiry is checked without waiting, by re-sealing with a past expiry, in testBadArtifacts and
// testCodexReseed.)
func testArtifactTTLFlag(t *testing.T, cl *ptCluster) {
	const ttl = 5 * time.Second
	e := cl.newPod(t, "E", "--artifact-ttl", ttl.String())
	start := time.Now()
	tr := cl.post(t, e, keyAcme, cl.scriptRequest(t, 0, nil)).mustComplete(t, "turn 0 on E")
	key := artifactKey(tenantAcme, tr.resp.ID)
	pttl, err := cl.rdb.PTTL(t.Context(), key).Result()
	if err != nil || pttl <= 0 || pttl > ttl {
		t.Errorf("Redis TTL of %s = %v (%v), want within (0, %v]", key, pttl, err, ttl)
	}
	raw, err := cl.rdb.Get(t.Context(), key).Bytes()
	if err != nil {
		t.Fatalf("read artifact: %v", err)
	}
	art, err := cl.sealer.OpenArtifact(tenantAcme, raw)
	if err != nil {
		t.Fatalf("open artifact: %v", err)
	}
	// Sealed expiries have whole seconds.
	if lo, hi := start.Add(ttl).Add(-time.Second), time.Now().Add(ttl); art.ExpiresAt.Before(lo) || art.ExpiresAt.After(hi) {
		t.Errorf("artifact sealed to expire at %v, want within [%v, %v]", art.ExpiresAt, lo, hi)
	}

	req := cl.scriptRequest(t, 0, nil)
	req["store"], req["include"] = false, []string{"reasoning.encrypted_content"}
	tr = cl.post(t, e, keyAcme, req).mustComplete(t, "store:false turn on E")
	reasoning, _ := tr.resp.item(t, "reasoning")
	if reasoning.EncryptedContent == nil {
		t.Fatalf("reasoning item without encrypted_content")
	}
	b64, ok := strings.CutPrefix(*reasoning.EncryptedContent, "stitch1:")
	blob, err := base64.RawURLEncoding.DecodeString(b64)
	if !ok || err != nil {
		t.Fatalf("encrypted_content %q is not a stitch1 blob: %v", *reasoning.EncryptedContent, err)
	}
	_, exp, err := cl.sealer.Open(tenantAcme, "reseed", blob)
	if err != nil {
		t.Fatalf("open reseed blob: %v", err)
	}
	if hi := time.Now().Add(ttl); exp.After(hi) || exp.Before(start) {
		t.Errorf("reseed blob expires at %v, want by %v", exp, hi)
	}
}
