package store_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/store/redistest"
)

// Issue 31, item 3: a miss is "not found" only when proven. These tests make a
// response exist that Redis lacks (a write queued on another pod, a write
// Redis lost in a restart) and check that every read of it on another pod is
// ErrUnavailable (503, retried by clients), never ErrNotFound (a 400 or 404
// that SDKs do not retry); and that once the pods re-synced, misses are
// definite again.

// cutConn is a connection that fails every read and write while cut is set:
// a pod partitioned from Redis while the others still reach it.
type cutConn struct {
	net.Conn
	cut *atomic.Bool
}

var errCut = errors.New("test: partitioned from Redis")

func (c cutConn) Read(b []byte) (int, error) {
	if c.cut.Load() {
		return 0, errCut
	}
	return c.Conn.Read(b)
}

func (c cutConn) Write(b []byte) (int, error) {
	if c.cut.Load() {
		return 0, errCut
	}
	return c.Conn.Write(b)
}

// partitionable returns a client of d's Redis whose connections fail while
// cut is set.
func (d *deployment) partitionable(cut *atomic.Bool) redis.UniversalClient {
	c := redis.NewClient(&redis.Options{
		Addr: d.redis.Addr, MaxRetries: -1, DialTimeout: 500 * time.Millisecond,
		ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond, ContextTimeoutEnabled: true,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if cut.Load() {
				return nil, errCut
			}
			var dl net.Dialer
			conn, err := dl.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return cutConn{conn, cut}, nil
		},
	})
	d.t.Cleanup(func() { c.Close() })
	return c
}

func (d *deployment) podWith(dir string, c redis.UniversalClient, opts store.FallbackOptions) *pod {
	d.t.Helper()
	local := openBolt(d.t, dir)
	opts.SyncInterval = -1
	shared := store.NewRedisCheckpoints(c, store.RedisCheckpointsOptions{Sealer: d.sealer})
	p := &pod{Fallback: store.NewFallback(shared, local, opts), local: local}
	d.t.Cleanup(p.stop)
	return p
}

// wantUnavailable checks err is a 503 and not a not-found.
func wantUnavailable(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrNotFound) {
		t.Errorf("%s = %v, want ErrUnavailable (503, retry) and not ErrNotFound: the response exists on another pod", what, err)
	}
}

// TestFallbackMissOfQueuedWrite: pod A is cut off from Redis, writes R (kept
// locally and queued; the client sees it completed), while pod B still
// reaches Redis and sees no trouble at all. Every read of R through B is
// ErrUnavailable while A is cut off (A's lease no longer vouches for it); so is
// a miss of an id never written (B cannot tell them apart). Once A is back
// and synced, B reads R, and a never-written id is ErrNotFound again. When
// A stays away past PresumedGone, misses are definite again too.
func TestFallbackMissOfQueuedWrite(t *testing.T) {
	d := newDeployment(t)
	var cut atomic.Bool
	opts := store.FallbackOptions{Lease: 500 * time.Millisecond, PresumedGone: time.Hour}
	a := d.podWith(t.TempDir(), d.partitionable(&cut), opts)
	b := d.podWith(t.TempDir(), d.client, opts)
	d.sync(a)
	d.sync(b)
	r0 := turn(t, a, "acme", "resp_before", nil)
	if _, err := b.GetResponse(t.Context(), "acme", r0.id); err != nil {
		t.Fatalf("pod b reads pod a's response: %v", err)
	}
	if _, err := b.GetResponse(t.Context(), "acme", "resp_never"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("both pods vouching: a miss = %v, want ErrNotFound", err)
	}

	cut.Store(true)
	r1 := turn(t, a, "acme", "resp_queued", r0) // returns once a's lease ran out
	if q := a.CheckpointStats().Queued; q != 1 {
		t.Fatalf("pod a cut off: queued = %d, want 1", q)
	}
	_, err := b.GetResponse(t.Context(), "acme", r1.id)
	wantUnavailable(t, "pod b: GetResponse of a response queued on pod a", err)
	_, err = b.GetItems(t.Context(), "acme", r1.cp.OutputItemIDs)
	wantUnavailable(t, "pod b: GetItems of its output items", err)
	wantUnavailable(t, "pod b: DeleteResponse of it", b.DeleteResponse(t.Context(), "acme", r1.id))
	_, err = b.GetResponse(t.Context(), "acme", "resp_never")
	wantUnavailable(t, "pod b: a miss while pod a holds queued responses", err)
	if n := b.CheckpointStats().Unproven; n != 4 {
		t.Errorf("pod b: Unproven = %d, want 4", n)
	}

	cut.Store(false)
	d.sync(a) // replays r1, then vouches again
	if n := lost(t, b, []*written{r0, r1}); n != 0 {
		t.Errorf("pod b after pod a replayed: %d lost", n)
	}
	if _, err := b.GetResponse(t.Context(), "acme", "resp_never"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("pod a replayed and vouches: a miss = %v, want ErrNotFound", err)
	}

	// Pod a cut off for good: its lease stops counting once presumed gone.
	c := d.podWith(t.TempDir(), d.client, store.FallbackOptions{Lease: 500 * time.Millisecond, PresumedGone: 500 * time.Millisecond})
	d.sync(c)
	cut.Store(true)
	waitFor(t, func() error {
		_, err := c.GetResponse(t.Context(), "acme", "resp_never")
		if !errors.Is(err, store.ErrNotFound) {
			return errors.New("the cut-off pod still blocks not-found: " + err.Error())
		}
		return nil
	})
}

// TestFallbackMissAfterRestartLostWrites: Redis (AOF on) restarts and has lost
// a response it acknowledged (its last unsynced second, simulated by deleting
// the record before the restart). Until the writing pod re-publishes, a read
// on the other pod is ErrUnavailable: that pod's own lease is stamped with the
// old Redis process. The writing pod's Sync notices the restart (run_id) and
// re-publishes its recent writes; then the response reads everywhere.
func TestFallbackMissAfterRestartLostWrites(t *testing.T) {
	srv := redistest.StartPersistent(t)
	c := store.NewRedisClient(store.RedisOptions{Addrs: []string{srv.Addr}})
	t.Cleanup(func() { c.Close() })
	d := &deployment{t: t, redis: srv, client: c, sealer: newSealer(t, nil)}
	// Settle off: the leases alone must catch it (the settle window would
	// also answer 503, for a few seconds after each pod noticed).
	opts := store.FallbackOptions{Settle: -1}
	a, b := d.podWith(t.TempDir(), c, opts), d.podWith(t.TempDir(), c, opts)
	d.sync(a)
	d.sync(b)
	kept := turn(t, a, "acme", "resp_kept", nil)
	gone := turn(t, a, "acme", "resp_lost_by_redis", nil)
	if err := c.Del(t.Context(), "stitch:{acme}:resp:"+gone.id).Err(); err != nil {
		t.Fatal(err)
	}
	srv.Restart() // AOF: everything else comes back, with a new run_id
	d.awaitRedis()
	if _, err := d.shared().GetResponse(t.Context(), "acme", kept.id); err != nil {
		t.Fatalf("Redis with AOF lost %s across the restart: %v", kept.id, err)
	}
	_, err := b.GetResponse(t.Context(), "acme", gone.id)
	wantUnavailable(t, "pod b: GetResponse of a response Redis lost, before pod a re-published", err)
	d.sync(a) // notices the new run_id, re-publishes its recent writes
	d.sync(b)
	if n := lost(t, b, []*written{kept, gone}); n != 0 {
		t.Errorf("after pod a's Sync: %d lost via pod b", n)
	}
	if n := lost(t, d.shared(), []*written{gone}); n != 0 {
		t.Errorf("pod a did not re-publish %s to Redis", gone.id)
	}
	if _, err := b.GetResponse(t.Context(), "acme", "resp_never"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("both pods synced after the restart: a miss = %v, want ErrNotFound", err)
	}
}

// TestFallbackMissAfterRestartEmpty: Redis restarts without persistence. A
// response pod A wrote is gone from Redis; pod B, which has not synced since,
// answers ErrUnavailable (its own lease is gone with Redis's data, so it knows
// Redis lost data it cannot see), until the pods synced and re-published.
func TestFallbackMissAfterRestartEmpty(t *testing.T) {
	d := newDeployment(t)
	opts := store.FallbackOptions{Settle: -1}
	a, b := d.podWith(t.TempDir(), d.client, opts), d.podWith(t.TempDir(), d.client, opts)
	d.sync(a)
	d.sync(b)
	r := turn(t, a, "acme", "resp_forgotten", nil)
	d.redis.Restart()
	d.awaitRedis()
	_, err := b.GetResponse(t.Context(), "acme", r.id)
	wantUnavailable(t, "pod b: GetResponse after Redis restarted empty, before any pod synced", err)
	d.sync(a)
	d.sync(b)
	if n := lost(t, b, []*written{r}); n != 0 {
		t.Errorf("after both pods synced: %s lost via pod b", r.id)
	}
	if _, err := b.GetResponse(t.Context(), "acme", "resp_never"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("both pods synced after the restart: a miss = %v, want ErrNotFound", err)
	}
}
