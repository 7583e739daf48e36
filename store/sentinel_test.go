package store_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/store/redistest"
)

// TestRedisSentinel: --redis redis+sentinel://host:port/master reaches the master a real
// `redis-server --sentinel` monitors, and follows a failover: after SENTINEL FAILOVER promotes the
// replica, checkpoints are written and read through the new master.
func TestRedisSentinel(t *testing.T) {
	master := redistest.StartServer(t)
	replica := redistest.StartServer(t)
	ctx := t.Context()
	mc := redis.NewClient(&redis.Options{Addr: master.Addr})
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr})
	t.Cleanup(func() { mc.Close(); rc.Close() })
	// Redis 7 delays diskless syncs by 5 s by default; the test needs the replica now.
	if err := mc.ConfigSet(ctx, "repl-diskless-sync-delay", "0").Err(); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(master.Addr)
	if err := rc.ReplicaOf(ctx, host, port).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() error {
		info, err := rc.Info(ctx, "replication").Result()
		if err == nil && !strings.Contains(info, "master_link_status:up") {
			err = fmt.Errorf("replica not synced: %s", info)
		}
		return err
	})
	sentinel := startSentinel(t, master.Addr)
	sc := redis.NewSentinelClient(&redis.Options{Addr: sentinel})
	t.Cleanup(func() { sc.Close() })
	waitFor(t, func() error {
		replicas, err := sc.Replicas(ctx, "mymaster").Result()
		if err == nil && len(replicas) == 0 {
			err = fmt.Errorf("sentinel has not discovered the replica yet")
		}
		return err
	})

	opts, err := store.ParseRedisURL("redis+sentinel://" + sentinel + "/mymaster")
	if err != nil {
		t.Fatal(err)
	}
	c := store.NewRedisClient(opts)
	t.Cleanup(func() { c.Close() })
	cps := store.NewRedisCheckpoints(c, store.RedisCheckpointsOptions{})
	put := func(id string) error {
		return cps.PutResponse(ctx, &store.Checkpoint{ID: id, Tenant: "acme", Status: "completed",
			Response: []byte(`{}`), ConversationItemIDs: []string{}}, nil)
	}
	if err := put("resp_before"); err != nil {
		t.Fatalf("put through the sentinel-managed master: %v", err)
	}
	if n, err := mc.Exists(ctx, "stitch:{acme}:resp:resp_before").Result(); err != nil || n != 1 {
		t.Fatalf("the record is not on the master the sentinel names: %d, %v", n, err)
	}
	if err := store.PingRedis(ctx, c); err != nil {
		t.Errorf("PingRedis: %v", err)
	}
	// Replication is asynchronous: a failover now could lose the write (as in production, where
	// the Fallback's journal re-publishes it); this test checks the client, so it waits.
	waitFor(t, func() error {
		if n, err := rc.Exists(ctx, "stitch:{acme}:resp:resp_before").Result(); err != nil || n != 1 {
			return fmt.Errorf("not replicated yet (%d, %v)", n, err)
		}
		return nil
	})

	// NOGOODSLAVE until the sentinel has talked to the replica itself.
	waitFor(t, func() error { return sc.Failover(ctx, "mymaster").Err() })
	waitFor(t, func() error {
		addr, err := sc.GetMasterAddrByName(ctx, "mymaster").Result()
		if err == nil && net.JoinHostPort(addr[0], addr[1]) != replica.Addr {
			err = fmt.Errorf("sentinel still names %v", addr)
		}
		return err
	})
	// The client follows the sentinel's switch (its +switch-master event, or the old master
	// refusing writes once demoted): writes land on the promoted replica.
	after, i := "", 0
	waitFor(t, func() error {
		i++
		id := fmt.Sprintf("resp_after_%d", i)
		if err := put(id); err != nil {
			return err
		}
		if n, err := rc.Exists(ctx, "stitch:{acme}:resp:"+id).Result(); err != nil || n != 1 {
			return fmt.Errorf("write %s went to the old master (%d, %v)", id, n, err)
		}
		after = id
		return nil
	})
	// Reads retry: until the client dropped its connections to the old master, they may reach
	// it while it resyncs from the new one (empty for a moment). A Fallback answers such a
	// miss 503, not "not found": the pods' leases are stamped by the new master's run_id.
	for _, id := range []string{"resp_before", after} {
		waitFor(t, func() error {
			_, err := cps.GetResponse(ctx, "acme", id)
			return err
		})
	}
}

// startSentinel runs `redis-server sentinel.conf --sentinel` monitoring master as "mymaster"
// (quorum 1) and returns its address. It is killed when the test ends.
func startSentinel(t *testing.T, master string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not on PATH")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	host, mport, _ := net.SplitHostPort(master)
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	cfg := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor mymaster %s %s 1\n"+
		"sentinel down-after-milliseconds mymaster 1000\nsentinel failover-timeout mymaster 5000\n", port, dir, host, mport)
	if err := os.WriteFile(conf, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, conf, "--sentinel")
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("sentinel output:\n%s", out.String())
		}
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	c := redis.NewSentinelClient(&redis.Options{Addr: addr})
	defer c.Close()
	waitFor(t, func() error { return c.Ping(context.Background()).Err() })
	return addr
}
