package store_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
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
			// MaxEvents 5: sse(5) is not logged; the marker takes its place (and number).
			if got.Events != 6 || got.Dropped != 1 || got.Marker != 5 || got.NextSeq() != 6 {
				t.Fatalf("after append: events %d dropped %d marker %d next %d, want 6, 1, 5, 6 (MaxEvents 5)", got.Events, got.Dropped, got.Marker, got.NextSeq())
			}
			evs, err := runs.Events(ctx, "acme", "resp_1", 3, 100)
			if err != nil || len(evs) != 3 || string(evs[0]) != string(sse(3)) || string(evs[1]) != string(sse(4)) ||
				!strings.Contains(string(evs[2]), `"type":"`+store.EventsOmitted+`","sequence_number":5,`) {
				t.Fatalf("Events(3) = %q, %v", evs, err)
			}
			if evs, _ := runs.Events(ctx, "other", "resp_1", 0, 100); len(evs) != 0 {
				t.Fatalf("another tenant reads %d events", len(evs))
			}
			// Finish logs the final events past the bound.
			got, err = runs.Finish(ctx, "acme", "resp_1", store.RunCompleted, []byte(`{"status":"completed"}`), [][]byte{sse(6)})
			if err != nil || got.Status != store.RunCompleted || got.Events != 7 {
				t.Fatalf("Finish = %+v, %v", got, err)
			}
			if _, err := runs.Append(ctx, "acme", "resp_1", [][]byte{sse(7)}); !errors.Is(err, store.ErrRunFinished) {
				t.Fatalf("Append after Finish: %v, want ErrRunFinished", err)
			}
			got, changed, err := runs.Cancel(ctx, "acme", "resp_1", func(b []byte) []byte { return []byte(`{"status":"cancelled"}`) }, nil)
			if err != nil || changed || got.Status != store.RunCompleted {
				t.Fatalf("Cancel of a finished run = %+v, %v, %v; want it unchanged", got, changed, err)
			}

			// A run cancelled meanwhile: the owner's next write sees it; its cancelled finish
			// replaces the response but logs nothing.
			run2 := &store.Run{ID: "resp_2", Tenant: "acme", Owner: "pod-a", Status: store.RunInProgress, Response: []byte(`{"status":"in_progress"}`)}
			if err := runs.Create(ctx, run2, [][]byte{sse(0)}); err != nil {
				t.Fatal(err)
			}
			got, changed, err = runs.Cancel(ctx, "acme", "resp_2", func(b []byte) []byte { return []byte(`{"status":"cancelled"}`) }, nil)
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
			if got, changed, err := runs.Cancel(ctx, "acme", "resp_3", func(b []byte) []byte { return b }, nil); err != nil || changed || got.Status != store.RunFailed {
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

// TestRunsSettleDecidesCancel: the owner's Settle and a Cancel decide the race between a
// generation's end and a cancel in one atomic update each: whichever comes first wins, and the
// loser learns it (Settle: ErrRunFinished; Cancel: unchanged, the run unfinished until its owner
// finishes it). A cancel logs its event as the stream's last, numbered after the last event.
func TestRunsSettleDecidesCancel(t *testing.T) {
	for name, open := range recordBackends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			now := time.Unix(1_000_000, 0)
			var mu sync.Mutex
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			runs := store.NewRuns(open(t), store.RunsOptions{Lease: 10 * time.Second, Now: clock})
			cancelled := func([]byte) []byte { return []byte(`{"status":"cancelled"}`) }
			ended := func(seq int) []byte {
				return []byte("event: error\ndata: {\"sequence_number\":" + strconv.Itoa(seq) + "}\n\n")
			}
			newRun := func(id string) {
				t.Helper()
				if err := runs.Create(ctx, &store.Run{ID: id, Tenant: "acme", Status: store.RunInProgress, Response: []byte(`{}`)}, [][]byte{sse(0), sse(1)}); err != nil {
					t.Fatal(err)
				}
			}

			// Settle first: the cancel loses and sees the run unfinished; the owner's finish is
			// the answer. A repeated Settle (its reply lost) writes nothing.
			newRun("resp_s")
			if got, err := runs.Settle(ctx, "acme", "resp_s", [][]byte{sse(2)}); err != nil || !got.Settling || got.Events != 3 {
				t.Fatalf("Settle = %+v, %v", got, err)
			}
			if got, err := runs.Settle(ctx, "acme", "resp_s", [][]byte{sse(2)}); err != nil || got.Events != 3 {
				t.Fatalf("repeated Settle = %+v, %v; want no write", got, err)
			}
			got, changed, err := runs.Cancel(ctx, "acme", "resp_s", cancelled, ended)
			if err != nil || changed || got.Status != store.RunInProgress {
				t.Fatalf("Cancel of a settling run = %+v, %v, %v; want it unchanged, in progress", got, changed, err)
			}
			if _, err := runs.Finish(ctx, "acme", "resp_s", store.RunIncomplete, []byte(`{"status":"incomplete"}`), [][]byte{sse(3)}); err != nil {
				t.Fatal(err)
			}
			if got, changed, err := runs.Cancel(ctx, "acme", "resp_s", cancelled, ended); err != nil || changed || got.Status != store.RunIncomplete {
				t.Fatalf("Cancel after the finish = %+v, %v, %v", got, changed, err)
			}

			// Cancel first: the owner's Settle fails, its events are not logged; the cancel's
			// event ends the log.
			newRun("resp_c")
			if _, changed, err := runs.Cancel(ctx, "acme", "resp_c", cancelled, ended); err != nil || !changed {
				t.Fatalf("Cancel = %v, %v", changed, err)
			}
			if _, err := runs.Settle(ctx, "acme", "resp_c", [][]byte{sse(2)}); !errors.Is(err, store.ErrRunFinished) {
				t.Fatalf("Settle after Cancel: %v, want ErrRunFinished", err)
			}
			evs, err := runs.Events(ctx, "acme", "resp_c", 0, 10)
			if err != nil || len(evs) != 3 || string(evs[2]) != string(ended(2)) {
				t.Fatalf("log after Cancel = %q, %v", evs, err)
			}

			// Past the lease, readers see the run failed: Settle refuses too.
			newRun("resp_e")
			mu.Lock()
			now = now.Add(11 * time.Second)
			mu.Unlock()
			if _, err := runs.Settle(ctx, "acme", "resp_e", nil); !errors.Is(err, store.ErrLeaseExpired) {
				t.Fatalf("Settle past the lease: %v, want ErrLeaseExpired", err)
			}
		})
	}
}

// TestRunsLogIndexAcrossTheGap: a log that filled holds the marker where it filled; sequence
// numbers map to log indexes on both sides of the gap, and a cancel's event is numbered after
// every event generated, logged or not.
func TestRunsLogIndexAcrossTheGap(t *testing.T) {
	for name, open := range recordBackends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			runs := store.NewRuns(open(t), store.RunsOptions{MaxEvents: 3})
			for _, id := range []string{"resp_f", "resp_c"} {
				if err := runs.Create(ctx, &store.Run{ID: id, Tenant: "acme", Status: store.RunInProgress, Response: []byte(`{}`)}, [][]byte{sse(0), sse(1)}); err != nil {
					t.Fatal(err)
				}
				if _, err := runs.Append(ctx, "acme", id, [][]byte{sse(2), sse(3), sse(4)}); err != nil {
					t.Fatal(err)
				}
				got, err := runs.Append(ctx, "acme", id, [][]byte{sse(5), sse(6)})
				if err != nil || got.Events != 4 || got.Marker != 3 || got.Dropped != 4 || got.NextSeq() != 7 {
					t.Fatalf("%s after the cap = %+v, %v", id, got, err)
				}
				for after, want := range map[int]int{-1: 0, 1: 2, 2: 3} {
					if i, ok := got.LogIndex(after); !ok || i != want {
						t.Fatalf("LogIndex(%d) = %d, %v; want %d", after, i, ok, want)
					}
				}
				if _, ok := got.LogIndex(3); ok {
					t.Fatal("LogIndex past the marker is known before the run ends")
				}
			}
			got, err := runs.Finish(ctx, "acme", "resp_f", store.RunCompleted, []byte(`{}`), [][]byte{sse(7), sse(8)})
			if err != nil {
				t.Fatal(err)
			}
			for after, want := range map[int]int{3: 4, 6: 4, 7: 5, 8: 6} {
				if i, ok := got.LogIndex(after); !ok || i != want {
					t.Fatalf("finished: LogIndex(%d) = %d, %v; want %d", after, i, ok, want)
				}
			}
			evs, err := runs.Events(ctx, "acme", "resp_f", 3, 10)
			if err != nil || len(evs) != 3 || !strings.Contains(string(evs[0]), `"sequence_number":3,"first_omitted":3`) || string(evs[1]) != string(sse(7)) {
				t.Fatalf("log from the marker = %q, %v", evs, err)
			}
			_, changed, err := runs.Cancel(ctx, "acme", "resp_c", func(b []byte) []byte { return b }, func(seq int) []byte { return sse(seq) })
			if err != nil || !changed {
				t.Fatal(changed, err)
			}
			if evs, err := runs.Events(ctx, "acme", "resp_c", 4, 10); err != nil || len(evs) != 1 || string(evs[0]) != string(sse(7)) {
				t.Fatalf("cancel event past the gap = %q, %v", evs, err)
			}
		})
	}
}
