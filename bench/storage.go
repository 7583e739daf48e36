package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stitchllm/stitch/store"
)

// StorageResult is what one mode's artifact tiers hold per conversation once its workload ended
// (issue 20): the hot cache, L1 and a real Redis as the portable tier, each against the size of
// one conversation's latest entry in that tier.
type StorageResult struct {
	Conversations int `json:"conversations"`
	// HotBytesPerConversation is the hot cache's estimated bytes (prepare.HotArtifacts) over the
	// conversations.
	HotBytesPerConversation float64 `json:"hot_bytes_per_conversation"`
	// L1BytesPerConversation and RedisBytesPerConversation are the sealed artifact bytes L1 and
	// Redis hold for the conversations' responses, per conversation; Redis is null when the
	// bench ran without redis-server.
	L1BytesPerConversation    float64  `json:"l1_bytes_per_conversation"`
	RedisBytesPerConversation *float64 `json:"redis_bytes_per_conversation"`
	// LatestArtifactBytes is the mean size of a conversation's latest entry in each tier: its
	// hot entry, and its artifact sealed as one full snapshot (what every turn stored before
	// chains) for L1 and Redis.
	LatestArtifactBytes TierBytes `json:"latest_artifact_bytes"`
	// Ratio is each tier's bytes per conversation over its latest entry (acceptance: ≤ 1.5).
	Ratio TierBytes `json:"ratio"`
}

// TierBytes is one number per tier.
type TierBytes struct {
	Hot   float64  `json:"hot"`
	L1    float64  `json:"l1"`
	Redis *float64 `json:"redis"`
}

// measureStorage sizes the tiers of p for the conversations of turns (response ids per session).
func measureStorage(ctx context.Context, p *proxy, turns []turnResult, withRedis bool) (*StorageResult, error) {
	sessions := map[int][]string{}
	latest := map[int]turnResult{}
	for _, t := range turns {
		if t.responseID == "" {
			continue
		}
		sessions[t.session] = append(sessions[t.session], t.responseID)
		if l, ok := latest[t.session]; !ok || t.turn > l.turn {
			latest[t.session] = t
		}
	}
	n := len(sessions)
	if n == 0 || p.store == nil {
		return nil, nil
	}
	tenant := p.rec.tenant()
	var l1, l2, fullSum, hotLatest float64
	for s, ids := range sessions {
		a, b, err := p.store.Footprint(ctx, tenant, ids)
		if err != nil {
			return nil, err
		}
		l1, l2 = l1+float64(a), l2+float64(b)
		full, err := p.store.FullBytes(ctx, tenant, latest[s].responseID)
		if err != nil {
			return nil, fmt.Errorf("latest artifact of session %d: %w", s, err)
		}
		fullSum += float64(full)
		if p.arts.Hot != nil {
			hotLatest += float64(p.arts.Hot.EntryBytes(tenant, latest[s].responseID))
		}
	}
	res := &StorageResult{Conversations: n, L1BytesPerConversation: l1 / float64(n)}
	if p.arts.Hot != nil {
		hot, _ := p.arts.Hot.Usage()
		res.HotBytesPerConversation = float64(hot) / float64(n)
	}
	res.LatestArtifactBytes = TierBytes{Hot: hotLatest / float64(n), L1: fullSum / float64(n)}
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	res.Ratio = TierBytes{Hot: ratio(res.HotBytesPerConversation, res.LatestArtifactBytes.Hot), L1: ratio(res.L1BytesPerConversation, res.LatestArtifactBytes.L1)}
	if withRedis {
		perConv, latestRedis := l2/float64(n), fullSum/float64(n)
		r := ratio(perConv, latestRedis)
		res.RedisBytesPerConversation, res.LatestArtifactBytes.Redis, res.Ratio.Redis = &perConv, &latestRedis, &r
	}
	return res, nil
}

// storageChecks are the acceptance lines of the storage objects: per conversation, each tier
// holds at most 1.5× its latest entry.
func (r *Result) storageChecks(verdict func(bool) string) []string {
	var out []string
	for _, m := range r.Modes {
		s := m.Storage
		if s == nil {
			continue
		}
		line := fmt.Sprintf("storage per conversation / latest entry (%s): hot %.2f×, L1 %.2f×", m.Mode, s.Ratio.Hot, s.Ratio.L1)
		ok := s.Ratio.Hot <= 1.5 && s.Ratio.L1 <= 1.5
		if s.Ratio.Redis != nil {
			line += fmt.Sprintf(", Redis %.2f×", *s.Ratio.Redis)
			ok = ok && *s.Ratio.Redis <= 1.5
		}
		out = append(out, line+" (want ≤ 1.5×: "+verdict(ok)+")")
	}
	return out
}

// writeStorage prints the storage objects.
func (r *Result) writeStorage(w io.Writer) {
	for _, m := range r.Modes {
		s := m.Storage
		if s == nil {
			continue
		}
		redisBytes, redisLatest := "—", "—"
		if s.RedisBytesPerConversation != nil {
			redisBytes, redisLatest = kb(*s.RedisBytesPerConversation), kb(*s.LatestArtifactBytes.Redis)
		}
		fmt.Fprintf(w, "storage %s (%d conversations): hot %s (latest %s), L1 %s (latest %s), Redis %s (latest %s) per conversation\n",
			m.Mode, s.Conversations, kb(s.HotBytesPerConversation), kb(s.LatestArtifactBytes.Hot),
			kb(s.L1BytesPerConversation), kb(s.LatestArtifactBytes.L1), redisBytes, redisLatest)
	}
}

func kb(b float64) string { return fmt.Sprintf("%.0f KB", b/1e3) }

// redisServer is a redis-server child process on a free loopback port, persistence off: the
// portable artifact tier of the bench's modes.
type redisServer struct {
	cmd    *exec.Cmd
	dir    string
	client redis.UniversalClient
}

// startRedis starts redis-server from PATH; it returns nil (and no error) when there is none.
func startRedis(ctx context.Context) (*redisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("redis: free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir, err := os.MkdirTemp("", "stitch-bench-redis-")
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	r := &redisServer{dir: dir}
	r.cmd = exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
	if err := r.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("redis: start %s: %w", bin, err)
	}
	// Wait for the port before the client dials, or go-redis logs every refused dial.
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			_ = r.cmd.Process.Kill()
			_ = r.cmd.Wait()
			os.RemoveAll(dir)
			return nil, fmt.Errorf("redis: not listening on %s: %w", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.client = store.NewRedisClient(store.RedisOptions{Addrs: []string{addr}})
	if err := r.client.Ping(ctx).Err(); err != nil {
		r.close()
		return nil, fmt.Errorf("redis: ping %s: %w", addr, err)
	}
	return r, nil
}

func (r *redisServer) close() {
	if r == nil {
		return
	}
	_ = r.client.Close()
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	_ = os.RemoveAll(r.dir)
}
