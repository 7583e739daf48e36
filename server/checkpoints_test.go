package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stitchllm/stitch/server"
	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/store/redistest"
)

// TestFallbackCheckpointsRedisDown: with Redis down, a pod keeps storing and continuing its own
// responses locally, another pod gets ErrUnavailable (never a wrong answer), and once Redis is back
// the responses made meanwhile are replayed so every pod sees them.
func TestFallbackCheckpointsRedisDown(t *testing.T) {
	rs := redistest.StartServer(t)
	rc := store.NewRedisClient(store.RedisOptions{Addrs: []string{rs.Addr}})
	defer rc.Close()
	logger := slog.New(slog.DiscardHandler)
	pod := func() *server.FallbackCheckpoints {
		return &server.FallbackCheckpoints{Primary: store.NewRedisCheckpoints(rc, store.RedisCheckpointsOptions{}),
			Local: store.NewMemory(), Logger: logger}
	}
	a, b := pod(), pod()
	ctx := context.Background()
	put := func(f *server.FallbackCheckpoints, id string) error {
		cp := &store.Checkpoint{ID: id, Tenant: "acme", Model: "qwen3", Status: "completed", CreatedAt: time.Now(),
			InputItemIDs: []string{"msg_" + id}, ConversationItemIDs: []string{"msg_" + id}, Response: json.RawMessage(`{}`)}
		return f.PutResponse(ctx, cp, []store.Item{{ID: "msg_" + id, Data: json.RawMessage(`{"type":"message"}`)}})
	}

	if err := put(a, "resp_1"); err != nil {
		t.Fatal(err)
	}
	rs.Stop()
	if err := put(a, "resp_2"); err != nil {
		t.Fatalf("put with Redis down: %v, want success on the local store", err)
	}
	for _, id := range []string{"resp_1", "resp_2"} {
		if _, err := a.GetResponse(ctx, "acme", id); err != nil {
			t.Errorf("pod a, Redis down: GetResponse(%s) = %v, want its local copy", id, err)
		}
		if _, err := a.GetItems(ctx, "acme", []string{"msg_" + id}); err != nil {
			t.Errorf("pod a, Redis down: GetItems(%s) = %v", id, err)
		}
	}
	if _, err := b.GetResponse(ctx, "acme", "resp_2"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("pod b, Redis down: GetResponse = %v, want ErrUnavailable (503), never not-found", err)
	}

	rs.Restart() // an empty Redis (the test server keeps nothing on disk)
	// The next operation of pod a that reaches Redis replays what it queued.
	if _, err := a.GetResponse(ctx, "acme", "resp_2"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetResponse(ctx, "acme", "resp_2"); err != nil {
		t.Errorf("pod b after recovery: GetResponse(resp_2) = %v, want the replayed checkpoint", err)
	}
	if _, err := b.GetResponse(ctx, "other", "resp_2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another tenant reads resp_2: %v, want ErrNotFound", err)
	}
}
