package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/store/redistest"
)

// deployment is one real redis-server and the pods (Fallbacks over their own
// Bolt files) sharing it, as `stitch serve --redis` runs them.
type deployment struct {
	t      *testing.T
	redis  *redistest.Server
	client redis.UniversalClient
	sealer *store.Sealer
}

func newDeployment(t *testing.T) *deployment {
	srv := redistest.StartServer(t)
	c := store.NewRedisClient(store.RedisOptions{Addrs: []string{srv.Addr}})
	t.Cleanup(func() { c.Close() })
	return &deployment{t: t, redis: srv, client: c, sealer: newSealer(t, nil)}
}

// shared is a RedisCheckpoints as every pod configures it.
func (d *deployment) shared() *store.RedisCheckpoints {
	return store.NewRedisCheckpoints(d.client, store.RedisCheckpointsOptions{Sealer: d.sealer})
}

// pod opens a pod on dir; stop closes it as a shutdown would (Fallback,
// then the Bolt file), and runs at cleanup if not called.
type pod struct {
	*store.Fallback
	local *store.Bolt
}

func (d *deployment) pod(dir string) *pod {
	d.t.Helper()
	local := openBolt(d.t, dir)
	p := &pod{Fallback: store.NewFallback(d.shared(), local, store.FallbackOptions{SyncInterval: -1}), local: local}
	d.t.Cleanup(p.stop)
	return p
}

func (p *pod) stop() {
	p.Fallback.Close()
	p.local.Close()
}

// sync runs one Sync to completion, retrying while the client reconnects to
// a restarted server (bounded by waitFor).
func (d *deployment) sync(p *pod) {
	d.t.Helper()
	waitFor(d.t, func() error { return p.Sync(context.Background()) })
}

// awaitRedis waits until the client's pool answers again after a restart.
func (d *deployment) awaitRedis() {
	d.t.Helper()
	waitFor(d.t, func() error { return d.client.Ping(context.Background()).Err() })
}

// written is a response as the client saw it completed: its id and its whole
// conversation's item bytes.
type written struct {
	tenant, id string
	cp         *store.Checkpoint
	history    []store.Item // the whole conversation, in order
}

// turn writes a response through p as the server does: its own input and
// output items, the conversation so far passed as history. prev may be nil.
func turn(t *testing.T, p *pod, tenant, id string, prev *written) *written {
	t.Helper()
	in := store.Item{ID: "msg_in_" + id, Data: json.RawMessage(fmt.Sprintf(`{"type":"message","role":"user","content":%q}`, "question "+id))}
	out := store.Item{ID: "msg_out_" + id, Data: json.RawMessage(fmt.Sprintf(`{"type":"message","role":"assistant","content":%q}`, "answer "+id))}
	cp := &store.Checkpoint{ID: id, Tenant: tenant, Model: "qwen3", Status: "completed", CreatedAt: time.Now().UTC(),
		InputItemIDs: []string{in.ID}, OutputItemIDs: []string{out.ID}, Response: json.RawMessage(`{"id":"` + id + `"}`)}
	var history []store.Item
	if prev != nil {
		cp.PreviousID = prev.id
		history = prev.history
		cp.ConversationItemIDs = slices.Clone(prev.cp.ConversationItemIDs)
	}
	cp.ConversationItemIDs = append(cp.ConversationItemIDs, in.ID, out.ID)
	if err := p.PutResponseHistory(t.Context(), cp, []store.Item{in, out}, history); err != nil {
		t.Fatalf("put %s: %v (the client would not see it completed)", id, err)
	}
	return &written{tenant: tenant, id: id, cp: cp, history: append(slices.Clone(history), in, out)}
}

// lost counts the responses r cannot serve exactly: checkpoint and the
// whole conversation's bytes.
func lost(t *testing.T, r store.Checkpoints, all []*written) int {
	t.Helper()
	n := 0
	for _, w := range all {
		cp, err := r.GetResponse(t.Context(), w.tenant, w.id)
		if err != nil {
			t.Logf("lost %s: %v", w.id, err)
			n++
			continue
		}
		items, err := r.GetItems(t.Context(), w.tenant, cp.ConversationItemIDs)
		if err != nil || len(items) != len(w.history) {
			t.Logf("lost %s's conversation: %d items, %v", w.id, len(items), err)
			n++
			continue
		}
		for i := range items {
			if string(items[i].Data) != string(w.history[i].Data) {
				t.Logf("%s: item %d is %s, want %s", w.id, i, items[i].Data, w.history[i].Data)
				n++
				break
			}
		}
	}
	return n
}

// TestFallbackRedisRestartWithoutPersistence: two pods write conversations
// whose turns alternate between them; Redis is killed and started empty on
// the same port. Every response the clients saw completed stays readable,
// through either pod and through Redis alone.
func TestFallbackRedisRestartWithoutPersistence(t *testing.T) {
	d := newDeployment(t)
	a, b := d.pod(t.TempDir()), d.pod(t.TempDir())
	d.sync(a) // each pod records the epoch it starts with
	d.sync(b)
	var all []*written
	const conversations, turns = 40, 3
	for c := range conversations {
		var prev *written
		for i := range turns {
			p := a
			if (c+i)%2 == 1 {
				p = b
			}
			prev = turn(t, p, fmt.Sprintf("tenant%d", c%3), fmt.Sprintf("resp_%d_%d", c, i), prev)
			all = append(all, prev)
		}
	}
	if n := lost(t, d.shared(), all); n != 0 {
		t.Fatalf("before the restart: %d lost", n)
	}

	d.redis.Restart() // kill, then a fresh server with nothing on the same port
	d.awaitRedis()
	if _, err := d.shared().GetResponse(t.Context(), all[1].tenant, all[1].id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Redis kept %s across the restart (%v): the scenario needs an empty Redis", all[1].id, err)
	}
	// A read Redis answers "not found" is served from the pod that holds it
	// and re-published at once.
	first := all[0] // written by a
	if _, err := a.GetResponse(t.Context(), first.tenant, first.id); err != nil {
		t.Fatalf("pod a, after the restart: GetResponse(%s) = %v, want its local copy", first.id, err)
	}
	if n := lost(t, d.shared(), all[:1]); n != 0 {
		t.Errorf("%s was not re-published on read", first.id)
	}
	// Sync notices the lost epoch and re-publishes everything each pod holds.
	d.sync(a)
	d.sync(b)
	for name, r := range map[string]store.Checkpoints{"redis alone": d.shared(), "pod a": a, "pod b": b} {
		if n := lost(t, r, all); n != 0 {
			t.Errorf("after Redis restarted without persistence, %s: %d of %d responses lost", name, n, len(all))
		} else {
			t.Logf("%s: 0 of %d lost", name, len(all))
		}
	}
	if s := a.CheckpointStats(); s.Republished == 0 {
		t.Errorf("pod a stats %+v: nothing counted as re-published", s)
	}
}

// TestFallbackPodRestartDuringOutage: Redis stops; a pod keeps answering
// from its local copy and queues; the pod restarts during the outage; Redis
// comes back empty. The restarted pod replays its durable queue and
// re-publishes: nothing is lost.
func TestFallbackPodRestartDuringOutage(t *testing.T) {
	d := newDeployment(t)
	dir := t.TempDir()
	a, b := d.pod(dir), d.pod(t.TempDir())
	d.sync(a)
	var all, before []*written
	for c := range 10 {
		w := turn(t, a, "acme", fmt.Sprintf("resp_pre_%d", c), nil)
		before = append(before, w)
	}
	all = append(all, before...)

	d.redis.Stop()
	const outage = 60
	for c := range outage {
		var prev *written
		if c < len(before) {
			prev = before[c] // continuations of pre-outage conversations
		}
		all = append(all, turn(t, a, "acme", fmt.Sprintf("resp_out_%d", c), prev))
	}
	if s := a.CheckpointStats(); s.Queued != outage {
		t.Errorf("queued = %d, want %d", s.Queued, outage)
	}
	if n := lost(t, a, all); n != 0 {
		t.Errorf("pod a during the outage: %d of its own responses unreadable", n)
	}
	if _, err := b.GetResponse(t.Context(), "acme", "resp_out_0"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("pod b during the outage: GetResponse = %v, want ErrUnavailable (503), never not-found", err)
	}

	a.stop() // the pod restarts while Redis is still down
	a = d.pod(dir)
	if s := a.CheckpointStats(); s.Queued != outage {
		t.Errorf("after the pod restart: queued = %d, want %d (the queue is on disk)", s.Queued, outage)
	}
	if err := a.Sync(t.Context()); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Sync with Redis down = %v, want ErrUnavailable", err)
	}

	d.redis.Restart() // back, and empty
	d.awaitRedis()
	d.sync(a)
	if s := a.CheckpointStats(); s.Queued != 0 || s.Replayed != outage {
		t.Errorf("after replay: stats %+v, want queued 0 and %d replayed", s, outage)
	}
	for name, r := range map[string]store.Checkpoints{"redis alone": d.shared(), "pod b": b} {
		if n := lost(t, r, all); n != 0 {
			t.Errorf("pod restarted during the outage, read via %s: %d of %d lost", name, n, len(all))
		} else {
			t.Logf("%s: 0 of %d lost", name, len(all))
		}
	}
}

// TestFallbackDeletesAreTombstones: a delete through one pod reaches every
// pod's local copy; with Redis down no pod serves the deleted response, and
// neither replay nor re-publication after Redis lost its data brings it back.
func TestFallbackDeletesAreTombstones(t *testing.T) {
	d := newDeployment(t)
	a, b := d.pod(t.TempDir()), d.pod(t.TempDir())
	d.sync(a)
	d.sync(b)
	r := turn(t, b, "acme", "resp_deleted", nil) // pod b holds the local copy
	keep := turn(t, b, "acme", "resp_kept", nil)
	other := turn(t, a, "acme", "resp_deleted_by_owner", nil)

	if err := a.DeleteResponse(t.Context(), "acme", r.id); err != nil {
		t.Fatalf("delete via pod a: %v", err)
	}
	if err := a.DeleteResponse(t.Context(), "acme", other.id); err != nil {
		t.Fatalf("delete via pod a: %v", err)
	}
	d.sync(b) // pod b follows the deletions stream
	if got := b.CheckpointStats().DeletionsFollowed; got != 2 {
		t.Errorf("pod b followed %d deletions, want 2", got)
	}

	d.redis.Stop()
	if _, err := b.GetResponse(t.Context(), "acme", r.id); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Redis down: pod b serves the deleted response: %v", err)
	}
	if _, err := a.GetResponse(t.Context(), "acme", other.id); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Redis down: pod a serves the response it deleted: %v", err)
	}
	if _, err := b.GetResponse(t.Context(), "acme", keep.id); err != nil {
		t.Errorf("Redis down: pod b's kept response: %v", err)
	}
	// Written and deleted during the outage: both queued, in order.
	gone := turn(t, b, "acme", "resp_outage_deleted", nil)
	if err := b.DeleteResponse(t.Context(), "acme", gone.id); err != nil {
		t.Fatalf("delete during the outage via the pod holding it: %v", err)
	}
	if _, err := b.GetResponse(t.Context(), "acme", gone.id); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("pod b serves what it deleted during the outage: %v", err)
	}

	d.redis.Restart() // empty: the tombstones in Redis are gone too
	d.awaitRedis()
	d.sync(b)
	d.sync(a)
	shared := d.shared()
	for _, id := range []string{r.id, other.id, gone.id} {
		for name, s := range map[string]store.Checkpoints{"redis alone": shared, "pod a": a, "pod b": b} {
			if _, err := s.GetResponse(t.Context(), "acme", id); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s came back via %s after replay and re-publication: %v", id, name, err)
			}
		}
	}
	if n := lost(t, shared, []*written{keep}); n != 0 {
		t.Errorf("the kept response was lost")
	}
	// Re-putting a deleted id (a late replay, a retry) cannot resurrect it.
	if err := shared.PutResponse(t.Context(), r.cp, r.history); !errors.Is(err, store.ErrDeleted) {
		t.Errorf("PutResponse of a deleted id = %v, want ErrDeleted", err)
	}
}
