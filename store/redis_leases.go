package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Pod leases: how a pod proves a miss. A response one pod acknowledged may be
// absent from Redis for a while: its write failed and waits in that pod's
// replay queue, or Redis lost it (a restart with AOF's last second unsynced, a
// cluster failover before the replica got it) and the pod has not re-published
// it yet. Another pod cannot see that queue, so a miss is only a definite "not
// found" when every pod vouches that whatever it acknowledged is in Redis.
//
// Each pod renews a lease, prefix:pods[pod] = "<expiry ms>:<run_id>" (Redis's
// clock, and the run_id of the Redis process that holds the hash), at every
// Sync that ends with its queue empty and its recent writes re-published after
// any trouble: "until expiry, everything I acknowledged is in this Redis". A
// pod with a queue writes expiry = now: it vouches for nothing. A pod whose
// write fails waits for its own lease to run out before it acknowledges the
// queued response (Fallback.PutResponseHistory), so no lease ever vouches for
// a queued write. A reader's miss is definite only if no other pod's lease is
// expired or stamped with another run_id (Redis restarted since); leases
// expired longer than the presumed-gone bound are dropped (a pod killed for
// good stops blocking "not found" after it).

// leaseRenewScript: KEYS = pods hash; ARGV = pod, lease ms, settled ('1': vouch).
// Returns the lease left in ms (0 when not vouching).
var leaseRenewScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local run = string.match(redis.call('INFO', 'server'), 'run_id:(%w+)') or ''
local exp = now
if ARGV[3] == '1' then exp = now + tonumber(ARGV[2]) end
redis.call('HSET', KEYS[1], ARGV[1], exp .. ':' .. run)
return exp - now
`)

// leaseCheckScript: KEYS = pods hash; ARGV = gone ms, asking pod. Returns the
// names of the other pods that do not vouch now (expired, or stamped by
// another Redis process), and the asking pod's own name when its lease is
// missing or stamped by another Redis process: Redis restarted (or lost its
// data) since the asking pod last synced, so it cannot know yet what the
// restart lost (its own lease's expiry does not matter: the asking pod knows its
// own queue). Drops other pods' leases expired for longer than gone.
var leaseCheckScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local run = string.match(redis.call('INFO', 'server'), 'run_id:(%w+)') or ''
local gone = tonumber(ARGV[1])
local out = {}
local self = false
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local exp, r = string.match(all[i + 1], '^(%d+):(%w*)$')
  exp = tonumber(exp)
  if all[i] == ARGV[2] then
    self = (exp ~= nil and r == run)
  elseif exp == nil or exp < now - gone then
    redis.call('HDEL', KEYS[1], all[i])
  elseif exp <= now or r ~= run then
    out[#out + 1] = all[i]
  end
end
if not self then out[#out + 1] = ARGV[2] end
return out
`)

func (s *RedisCheckpoints) podsKey() string { return s.prefix + ":pods" }

// renewLease writes pod's lease: vouching for lease when settled, else not
// vouching. It returns how long the lease vouches from now (0 when not).
func (s *RedisCheckpoints) renewLease(ctx context.Context, pod string, lease time.Duration, settled bool) (time.Duration, error) {
	flag := "0"
	if settled {
		flag = "1"
	}
	left, err := leaseRenewScript.Run(ctx, s.c, []string{s.podsKey()}, pod, lease.Milliseconds(), flag).Int64()
	if err != nil {
		return 0, redisErr(ctx, "renew pod lease", err)
	}
	return time.Duration(left) * time.Millisecond, nil
}

// unvouched returns the pods other than pod whose lease does not vouch now.
func (s *RedisCheckpoints) unvouched(ctx context.Context, pod string, gone time.Duration) ([]string, error) {
	pods, err := leaseCheckScript.Run(ctx, s.c, []string{s.podsKey()}, gone.Milliseconds(), pod).StringSlice()
	if err != nil {
		return nil, redisErr(ctx, "check pod leases", err)
	}
	return pods, nil
}

// dropLease removes pod's lease (a clean shutdown with nothing queued).
func (s *RedisCheckpoints) dropLease(ctx context.Context, pod string) error {
	return redisErr(ctx, "drop pod lease", s.c.HDel(ctx, s.podsKey(), pod).Err())
}

// fingerprint names the Redis processes serving the store now: the run_id of
// the node (or sentinel-managed master), or of every cluster master, sorted.
// It changes when Redis restarted or failed over, which may have lost the
// last writes it acknowledged.
func (s *RedisCheckpoints) fingerprint(ctx context.Context) (string, error) {
	runID := func(ctx context.Context, c redis.Cmdable) (string, error) {
		info, err := c.Info(ctx, "server").Result()
		if err != nil {
			return "", err
		}
		for line := range strings.SplitSeq(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
				return v, nil
			}
		}
		return "", errors.New("INFO server has no run_id")
	}
	cc, ok := s.c.(*redis.ClusterClient)
	if !ok {
		id, err := runID(ctx, s.c)
		if err != nil {
			return "", redisErr(ctx, "read redis run_id", err)
		}
		return id, nil
	}
	var mu sync.Mutex
	var ids []string
	err := cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		id, err := runID(ctx, n)
		if err != nil {
			return fmt.Errorf("%s: %w", n.Options().Addr, err)
		}
		mu.Lock()
		ids = append(ids, id)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return "", redisErr(ctx, "read cluster masters' run_id", err)
	}
	slices.Sort(ids)
	return strings.Join(ids, ","), nil
}
