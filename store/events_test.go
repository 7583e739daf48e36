package store_test

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/store/redistest"
)

// recordBackends returns a constructor of a fresh, empty backend of each kind.
func recordBackends(t *testing.T) map[string]func(t *testing.T) store.RecordBackend {
	var redisAddr string
	var once sync.Once
	var prefix atomic.Int64
	return map[string]func(t *testing.T) store.RecordBackend{
		"memory": func(t *testing.T) store.RecordBackend { return store.MemoryRecords(nil) },
		"bolt": func(t *testing.T) store.RecordBackend {
			b, err := store.OpenBolt(t.TempDir(), store.BoltOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			r, err := store.BoltRecords(b)
			if err != nil {
				t.Fatal(err)
			}
			return r
		},
		"redis": func(t *testing.T) store.RecordBackend {
			once.Do(func() { redisAddr = redistest.Start(t) })
			c := store.NewRedisClient(store.RedisOptions{Addrs: []string{redisAddr}})
			t.Cleanup(func() { c.Close() })
			return store.RedisRecords(c, fmt.Sprintf("t%d", prefix.Add(1)))
		},
	}
}

func sse(i int) []byte {
	return []byte("event: e\ndata: {\"sequence_number\":" + strconv.Itoa(i) + "}\n\n")
}

func TestRuns(t *testing.T) {
	for name, open := range recordBackends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			now := time.Unix(1_000_000, 0)
			var mu sync.Mutex
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
			runs := store.NewRuns(open(t), store.RunsOptions{Lease: 10 * time.Second, MaxEvents: 5, Now: clock})

			run := &store.Run{ID: "resp_1", Tenant: "acme", Owner: "pod-a", Status: store.RunInProgress, Response: []byte(`{"status":"in_progress"}`)}
			if err := runs.Create(ctx, run, [][]byte{sse(0), sse(1)}); err != nil {
				t.Fatal(err)
			}
			if err := runs.Create(ctx, run, nil); !errors.Is(err, store.ErrInvalidKey) {
				t.Fatalf("second Create: %v, want ErrInvalidKey", err)
			}
			if _, err := runs.Get(ctx, "other", "resp_1"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("another tenant's Get: %v, want ErrNotFound", err)
			}
			got, err := runs.Append(ctx, "acme", "resp_1", [][]byte{sse(2), sse(3), sse(4), sse(5)})
			if err != nil {
				t.Fatal(err)
			}
			if got.Events != 5 || got.Dropped != 1 {
				t.Fatalf("after append: events %d dropped %d, want 5 and 1 (MaxEvents 5)", got.Events, got.Dropped)
			}
			evs, err := runs.Events(ctx, "acme", "resp_1", 3, 100)
			if err != nil || len(evs) != 2 || string(evs[0]) != string(sse(3)) || string(evs[1]) != string(sse(4)) {
				t.Fatalf("Events(3) = %q, %v", evs, err)
			}
			if evs, _ := runs.Events(ctx, "other", "resp_1", 0, 100); len(evs) != 0 {
				t.Fatalf("another tenant reads %d events", len(evs))
			}
			// Finish logs the final events past the bound.
			got, err = runs.Finish(ctx, "acme", "resp_1", store.RunCompleted, []byte(`{"status":"completed"}`), [][]byte{sse(6)})
			if err != nil || got.Status != store.RunCompleted || got.Events != 6 {
				t.Fatalf("Finish = %+v, %v", got, err)
			}
			if _, err := runs.Append(ctx, "acme", "resp_1", [][]byte{sse(7)}); !errors.Is(err, store.ErrRunFinished) {
				t.Fatalf("Append after Finish: %v, want ErrRunFinished", err)
			}
			got, changed, err := runs.Cancel(ctx, "acme", "resp_1", func(b []byte) []byte { return []byte(`{"status":"cancelled"}`) })
			if err != nil || changed || got.Status != store.RunCompleted {
				t.Fatalf("Cancel of a finished run = %+v, %v, %v; want it unchanged", got, changed, err)
			}

			// A run cancelled meanwhile: the owner's next write sees it; its cancelled finish
			// replaces the response but logs nothing.
			run2 := &store.Run{ID: "resp_2", Tenant: "acme", Owner: "pod-a", Status: store.RunInProgress, Response: []byte(`{"status":"in_progress"}`)}
			if err := runs.Create(ctx, run2, [][]byte{sse(0)}); err != nil {
				t.Fatal(err)
			}
			got, changed, err = runs.Cancel(ctx, "acme", "resp_2", func(b []byte) []byte { return []byte(`{"status":"cancelled"}`) })
			if err != nil || !changed || got.Status != store.RunCancelled || string(got.Response) != `{"status":"cancelled"}` {
				t.Fatalf("Cancel = %+v, %v, %v", got, changed, err)
			}
			if _, err := runs.Append(ctx, "acme", "resp_2", [][]byte{sse(1)}); !errors.Is(err, store.ErrRunFinished) {
				t.Fatalf("Append after Cancel: %v, want ErrRunFinished", err)
			}
			if _, err := runs.Finish(ctx, "acme", "resp_2", store.RunCompleted, []byte(`{}`), [][]byte{sse(1)}); !errors.Is(err, store.ErrRunFinished) {
				t.Fatalf("Finish completed after Cancel: %v, want ErrRunFinished", err)
			}
			got, err = runs.Finish(ctx, "acme", "resp_2", store.RunCancelled, []byte(`{"status":"cancelled","output":[1]}`), [][]byte{sse(1)})
			if err != nil || got.Events != 1 || string(got.Response) != `{"status":"cancelled","output":[1]}` {
				t.Fatalf("Finish cancelled after Cancel = %+v, %v", got, err)
			}

			// An owner that stops renewing: past its lease the run reads failed and cannot be
			// cancelled.
			run3 := &store.Run{ID: "resp_3", Tenant: "acme", Owner: "pod-b", Status: store.RunInProgress, Response: []byte(`{}`)}
			if err := runs.Create(ctx, run3, nil); err != nil {
				t.Fatal(err)
			}
			advance(9 * time.Second)
			if got, err := runs.Get(ctx, "acme", "resp_3"); err != nil || got.Status != store.RunInProgress || got.Expired {
				t.Fatalf("Get within the lease = %+v, %v", got, err)
			}
			advance(2 * time.Second)
			if got, err := runs.Get(ctx, "acme", "resp_3"); err != nil || got.Status != store.RunFailed || !got.Expired {
				t.Fatalf("Get past the lease = %+v, %v; want failed, expired", got, err)
			}
			if got, changed, err := runs.Cancel(ctx, "acme", "resp_3", func(b []byte) []byte { return b }); err != nil || changed || got.Status != store.RunFailed {
				t.Fatalf("Cancel past the lease = %+v, %v, %v", got, changed, err)
			}

			if err := runs.Delete(ctx, "acme", "resp_1"); err != nil {
				t.Fatal(err)
			}
			if _, err := runs.Get(ctx, "acme", "resp_1"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("Get after Delete: %v", err)
			}
			if evs, _ := runs.Events(ctx, "acme", "resp_1", 0, 100); len(evs) != 0 {
				t.Fatalf("events after Delete: %d", len(evs))
			}
			if _, err := runs.Append(ctx, "acme", "resp_1", nil); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("Append after Delete: %v", err)
			}
		})
	}
}

// TestRunsWaitWakesOnWrite: a local write ends a Wait at once (the timeout is far away).
func TestRunsWaitWakesOnWrite(t *testing.T) {
	runs := store.NewRuns(store.MemoryRecords(nil), store.RunsOptions{})
	ctx := t.Context()
	if err := runs.Create(ctx, &store.Run{ID: "r", Tenant: "t", Status: store.RunInProgress}, nil); err != nil {
		t.Fatal(err)
	}
	woke := make(chan struct{})
	started := make(chan struct{})
	go func() {
		close(started)
		runs.Wait(ctx, "t", "r", time.Hour)
		close(woke)
	}()
	<-started
	for {
		if _, err := runs.Append(ctx, "t", "r", [][]byte{sse(0)}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-woke:
			return
		case <-time.After(10 * time.Millisecond): // the waiter may not be registered yet
		}
	}
}

func TestConversations(t *testing.T) {
	for name, open := range recordBackends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			convs := store.NewConversations(open(t), store.ConversationsOptions{})
			c := &store.Conversation{ID: "conv_1", Tenant: "acme", CreatedAt: time.Unix(5, 0).UTC(), Metadata: []byte(`{"a":"b"}`)}
			items := []store.Item{{ID: "msg_1", Data: []byte(`{"id":"msg_1"}`)}, {ID: "msg_2", Data: []byte(`{"id":"msg_2"}`)}}
			if err := convs.Create(ctx, c, items); err != nil {
				t.Fatal(err)
			}
			if _, err := convs.Get(ctx, "other", "conv_1"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("another tenant's Get: %v", err)
			}
			if _, err := convs.Items(ctx, "other", "conv_1", []string{"msg_1"}); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("another tenant's Items: %v", err)
			}
			got, err := convs.Get(ctx, "acme", "conv_1")
			if err != nil || len(got.ItemIDs) != 2 || string(got.Metadata) != `{"a":"b"}` || got.Version != 0 {
				t.Fatalf("Get = %+v, %v", got, err)
			}
			got, err = convs.Append(ctx, "acme", "conv_1", []store.Item{{ID: "msg_3", Data: []byte(`{"id":"msg_3"}`)}}, "resp_1", 0)
			if err != nil || got.LastResponseID != "resp_1" || got.Version != 1 || len(got.ItemIDs) != 3 {
				t.Fatalf("Append = %+v, %v", got, err)
			}
			// Prepared from an older version: appended, but not the conversation's parent.
			got, err = convs.Append(ctx, "acme", "conv_1", []store.Item{{ID: "msg_4", Data: []byte(`{"id":"msg_4"}`)}}, "resp_2", 0)
			if err != nil || got.LastResponseID != "" || len(got.ItemIDs) != 4 {
				t.Fatalf("stale Append = %+v, %v", got, err)
			}
			if _, err := convs.Append(ctx, "acme", "conv_1", []store.Item{{ID: "msg_1", Data: []byte(`{}`)}}, "", 2); !errors.Is(err, store.ErrDuplicateItem) {
				t.Fatalf("duplicate Append: %v", err)
			}
			its, err := convs.Items(ctx, "acme", "conv_1", []string{"msg_3", "msg_1"})
			if err != nil || string(its[0].Data) != `{"id":"msg_3"}` || string(its[1].Data) != `{"id":"msg_1"}` {
				t.Fatalf("Items = %v, %v", its, err)
			}
			got, err = convs.DeleteItem(ctx, "acme", "conv_1", "msg_2")
			if err != nil || len(got.ItemIDs) != 3 || got.ItemIDs[1] != "msg_3" {
				t.Fatalf("DeleteItem = %+v, %v", got, err)
			}
			if _, err := convs.Items(ctx, "acme", "conv_1", []string{"msg_2"}); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("deleted item reads: %v", err)
			}
			if _, err := convs.DeleteItem(ctx, "acme", "conv_1", "msg_2"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("second DeleteItem: %v", err)
			}
			got, err = convs.SetMetadata(ctx, "acme", "conv_1", []byte(`{"x":"y"}`))
			if err != nil || string(got.Metadata) != `{"x":"y"}` {
				t.Fatalf("SetMetadata = %+v, %v", got, err)
			}
			if err := convs.Delete(ctx, "other", "conv_1"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("another tenant's Delete: %v", err)
			}
			if err := convs.Delete(ctx, "acme", "conv_1"); err != nil {
				t.Fatal(err)
			}
			if _, err := convs.Get(ctx, "acme", "conv_1"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("Get after Delete: %v", err)
			}
			if _, err := convs.Items(ctx, "acme", "conv_1", []string{"msg_1"}); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("items after Delete: %v", err)
			}
		})
	}
}

// TestSweepRecords: expired runs, their logs and conversations read as absent and are swept
// from the Bolt file; live ones stay.
func TestSweepRecords(t *testing.T) {
	ctx := t.Context()
	var mu sync.Mutex
	now := time.Unix(2_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	b, err := store.OpenBolt(t.TempDir(), store.BoltOptions{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	rb, err := store.BoltRecords(b)
	if err != nil {
		t.Fatal(err)
	}
	runs := store.NewRuns(rb, store.RunsOptions{TTL: time.Hour, Now: clock})
	convs := store.NewConversations(rb, store.ConversationsOptions{TTL: 2 * time.Hour})
	if err := runs.Create(ctx, &store.Run{ID: "r", Tenant: "t", Status: store.RunInProgress}, [][]byte{sse(0), sse(1)}); err != nil {
		t.Fatal(err)
	}
	if err := convs.Create(ctx, &store.Conversation{ID: "c", Tenant: "t"}, []store.Item{{ID: "i", Data: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	if n, err := store.SweepRecords(ctx, b); err != nil || n != 0 {
		t.Fatalf("sweep of live records = %d, %v", n, err)
	}
	mu.Lock()
	now = now.Add(90 * time.Minute)
	mu.Unlock()
	if _, err := runs.Get(ctx, "t", "r"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("expired run reads %v", err)
	}
	if evs, _ := runs.Events(ctx, "t", "r", 0, 10); len(evs) != 0 {
		t.Fatalf("expired run's log reads %d events", len(evs))
	}
	if n, err := store.SweepRecords(ctx, b); err != nil || n != 3 {
		t.Fatalf("sweep = %d, %v; want the run and its 2 events", n, err)
	}
	if _, err := convs.Get(ctx, "t", "c"); err != nil {
		t.Fatalf("live conversation: %v", err)
	}
}
