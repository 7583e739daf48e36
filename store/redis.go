package store

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
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
		slog.Any("addrs", o.Addrs), slog.Bool("cluster", o.Cluster), slog.String("username", o.Username),
		slog.String("password", "REDACTED"), slog.Int("db", o.DB), slog.Bool("tls", o.TLS != nil),
		slog.Duration("dial_timeout", o.DialTimeout), slog.Duration("read_timeout", o.ReadTimeout))
}

// NewRedisClient returns a go-redis client configured from opts. The caller
// owns it (Close it on shutdown); several stores may share one client.
// Connections are made lazily, so an unreachable Redis does not fail here.
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
	return redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs:         opts.Addrs,
		IsClusterMode: opts.Cluster,
		Username:      opts.Username,
		Password:      opts.Password,
		DB:            opts.DB,
		TLSConfig:     opts.TLS,
		DialTimeout:   orDefault(opts.DialTimeout, 500*time.Millisecond),
		ReadTimeout:   orDefault(opts.ReadTimeout, 500*time.Millisecond),
		WriteTimeout:  orDefault(opts.WriteTimeout, 500*time.Millisecond),
		// One dial attempt per command: go-redis's default (5 attempts, 100ms
		// apart) turns "Redis is down" into half a second per call.
		DialerRetries:         1,
		MaxRetries:            retries,
		PoolSize:              opts.PoolSize,
		ContextTimeoutEnabled: true,
		// Plain Redis (not Enterprise/Cloud) rejects the handshake; skip it.
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
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
