package store

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// RedisOptions configures NewRedisClient. The zero value (plus Addrs) is
// ready to use, with short timeouts: the artifact tier must fail fast (a miss
// only costs a render) rather than hold a request.
type RedisOptions struct {
	// Addrs are host:port addresses. One address means a single node; more,
	// or Cluster set, means Redis Cluster. Required.
	Addrs []string
	// Cluster forces cluster mode with a single seed address.
	Cluster bool
	// MasterName selects Redis Sentinel: Addrs are then the sentinels'
	// addresses and MasterName the monitored master's name. The client asks
	// the sentinels for the master and follows their failovers.
	MasterName string
	// SentinelUsername and SentinelPassword authenticate to the sentinels
	// (Username and Password are for the master). Redacted from logs.
	SentinelUsername, SentinelPassword string
	// Username and Password authenticate (ACL or requirepass). Password is
	// redacted from logs.
	Username, Password string
	// DB selects the database (single node only). Zero is DB 0.
	DB int
	// TLS enables TLS when non-nil.
	TLS *tls.Config
	// DialTimeout bounds connecting. Zero means 500ms.
	DialTimeout time.Duration
	// ReadTimeout and WriteTimeout bound each socket read and write. Zero
	// means 500ms. A context deadline, when shorter, wins.
	ReadTimeout, WriteTimeout time.Duration
	// PoolSize is the number of connections per node. Zero means go-redis's
	// default (10 per CPU).
	PoolSize int
	// MaxRetries is how often a failed command is retried. Zero means 1;
	// negative means never.
	MaxRetries int
}

// LogValue redacts the password.
func (o RedisOptions) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Any("addrs", o.Addrs), slog.Bool("cluster", o.Cluster), slog.String("master_name", o.MasterName),
		slog.String("username", o.Username),
		slog.String("password", "REDACTED"), slog.Int("db", o.DB), slog.Bool("tls", o.TLS != nil),
		slog.Duration("dial_timeout", o.DialTimeout), slog.Duration("read_timeout", o.ReadTimeout))
}

// clusterReloadInterval bounds how stale a Redis Cluster slot map may get
// while every command succeeds (go-redis's default is a minute); failures
// reload it at once (reloadOnError).
const clusterReloadInterval = 5 * time.Second

// NewRedisClient returns a go-redis client configured from opts. The caller
// owns it (Close it on shutdown); several stores may share one client.
// Connections are made lazily, so an unreachable Redis does not fail here.
// In cluster mode a failed command reloads the slot map (see reloadOnError):
// after a failover the client finds the promoted replica within one reload,
// instead of dialling the dead master until its periodic reload.
func NewRedisClient(opts RedisOptions) redis.UniversalClient {
	orDefault := func(d, def time.Duration) time.Duration {
		if d <= 0 {
			return def
		}
		return d
	}
	retries := opts.MaxRetries
	switch {
	case retries == 0:
		retries = 1
	case retries < 0:
		retries = -1
	}
	uo := &redis.UniversalOptions{
		Addrs:            opts.Addrs,
		IsClusterMode:    opts.Cluster,
		MasterName:       opts.MasterName,
		Username:         opts.Username,
		Password:         opts.Password,
		SentinelUsername: opts.SentinelUsername,
		SentinelPassword: opts.SentinelPassword,
		DB:               opts.DB,
		TLSConfig:        opts.TLS,
		DialTimeout:      orDefault(opts.DialTimeout, 500*time.Millisecond),
		ReadTimeout:      orDefault(opts.ReadTimeout, 500*time.Millisecond),
		WriteTimeout:     orDefault(opts.WriteTimeout, 500*time.Millisecond),
		// One dial attempt per command: go-redis's default (5 attempts, 100ms
		// apart) turns "Redis is down" into half a second per call.
		DialerRetries:         1,
		MaxRetries:            retries,
		PoolSize:              opts.PoolSize,
		ContextTimeoutEnabled: true,
		// Plain Redis (not Enterprise/Cloud) rejects the handshake; skip it.
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
	if opts.MasterName == "" && (opts.Cluster || len(opts.Addrs) > 1) {
		co := uo.Cluster()
		co.ClusterStateReloadInterval = clusterReloadInterval
		cc := redis.NewClusterClient(co)
		cc.AddHook(reloadOnError{cc})
		return cc
	}
	return redis.NewUniversalClient(uo)
}

// reloadOnError is a Redis Cluster hook: a command or pipeline that fails for
// any reason but a miss or the caller's own cancellation asks for a slot-map
// reload. go-redis reloads on MOVED, ASK and READONLY only; a refused or
// timed-out connection to a dead master leaves the old map in place, so
// after the failover promoted its replica every command of those slots still
// went to the dead address until the periodic reload (up to a minute). The
// reload is asynchronous and go-redis coalesces them (one at a time, then at
// most one more after a 200ms cool-down), so a burst of failures costs a few
// CLUSTER SLOTS calls, not one per failure.
type reloadOnError struct{ c *redis.ClusterClient }

func (h reloadOnError) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h reloadOnError) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.check(ctx, err)
		return err
	}
}

func (h reloadOnError) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.check(ctx, err)
		return err
	}
}

func (h reloadOnError) check(ctx context.Context, err error) {
	if err == nil || errors.Is(err, redis.Nil) || errors.Is(err, context.Canceled) {
		return
	}
	var re redis.Error
	if errors.As(err, &re) && !clusterStateError(re.Error()) {
		return // a reply (a script's error, OOM, WRONGTYPE): the node answered, the map is fine
	}
	h.c.ReloadState(ctx)
}

// clusterStateError reports a server reply that says the cluster's layout is
// changing: CLUSTERDOWN (a slot without a master during a failover), TRYAGAIN
// and a master turned replica (READONLY, also reloaded by go-redis).
func clusterStateError(msg string) bool {
	for _, p := range []string{"CLUSTERDOWN", "TRYAGAIN", "READONLY", "MASTERDOWN", "LOADING"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// PingRedis checks that Redis answers commands: PING on a single node or
// sentinel-managed master, PING on every master of a cluster (a slot range
// whose master does not answer fails every request of its tenants).
func PingRedis(ctx context.Context, c redis.UniversalClient) error {
	if cc, ok := c.(*redis.ClusterClient); ok {
		err := cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			if err := n.Ping(ctx).Err(); err != nil {
				return fmt.Errorf("%s: %w", n.Options().Addr, err)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("redis cluster ping: %w", err)
		}
		return nil
	}
	if err := c.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis ping: %w", err)
	}
	return nil
}

// RedisProbe answers readiness checks about Redis cheaply: it pings (see
// PingRedis) with a short timeout and keeps the answer for a while, so a
// load balancer probing every pod often costs Redis one PING per pod per
// TTL. Safe for concurrent use; concurrent checks share one ping.
type RedisProbe struct {
	c       redis.UniversalClient
	timeout time.Duration
	ttl     time.Duration

	mu   sync.Mutex
	at   time.Time // when err was measured (zero: never)
	err  error
	busy chan struct{} // closed when the ping in flight ends; nil when none
}

// NewRedisProbe returns a probe of c. Zero timeout means 500ms, zero ttl 1s.
func NewRedisProbe(c redis.UniversalClient, timeout, ttl time.Duration) *RedisProbe {
	if timeout <= 0 {
		timeout = 500 * time.Millisecond
	}
	if ttl <= 0 {
		ttl = time.Second
	}
	return &RedisProbe{c: c, timeout: timeout, ttl: ttl}
}

// Check returns nil when Redis answered its last ping, at most ttl ago; else
// the ping's error.
func (p *RedisProbe) Check(ctx context.Context) error {
	p.mu.Lock()
	if !p.at.IsZero() && time.Since(p.at) < p.ttl {
		err := p.err
		p.mu.Unlock()
		return err
	}
	if p.busy != nil {
		busy := p.busy
		p.mu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return ctx.Err()
		}
		p.mu.Lock()
		err := p.err
		p.mu.Unlock()
		return err
	}
	busy := make(chan struct{})
	p.busy = busy
	p.mu.Unlock()
	// Not the caller's ctx: the answer is shared with later callers.
	pctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	err := PingRedis(pctx, p.c)
	cancel()
	p.mu.Lock()
	p.at, p.err, p.busy = time.Now(), err, nil
	p.mu.Unlock()
	close(busy)
	return err
}

// redisKey is prefix:{tenant}:kind:id. The braces make the tenant the Redis
// Cluster hash tag, so a tenant's keys share one slot and MULTI and MGET work
// across them; validTenant keeps braces out of tenants so keys stay
// unambiguous.
func redisKey(prefix, tenant, kind, id string) string {
	return prefix + ":{" + tenant + "}:" + kind + ":" + id
}

// redisErr classifies a go-redis error: redis.Nil is ErrNotFound; a
// cancelled or expired ctx is returned as ctx.Err() (the caller's own
// deadline or disconnect, not a Redis fault); everything else — refused or
// timed-out connections, a closed pool, server error replies such as LOADING
// or OOM — wraps ErrUnavailable alongside the original error.
func redisErr(ctx context.Context, op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, redis.Nil):
		return fmt.Errorf("%s: %w", op, ErrNotFound)
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %w", op, ctx.Err())
	}
	return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
}
