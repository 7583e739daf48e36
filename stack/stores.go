package stack

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stitchllm/stitch/store"
)

// stores are the response store, the records of background runs and conversations, the
// portable artifact tier and the sealer Open assembled.
type stores struct {
	checkpoints store.Checkpoints
	records     store.RecordBackend // nil: in process memory (the server's default)
	portable    store.PortableCache // nil: single pod
	// ready is the shared store's part of /readyz (server.Options.StoreReady); nil: none.
	ready    func(context.Context) error
	sealKeys []store.SealKey
	sealer   *store.Sealer
}

// openStores opens the response store (Config.Checkpoints, else the Bolt file, behind Redis with
// --redis) and the sealer.
func (s *Stack) openStores(ctx context.Context, c Config) (*stores, error) {
	cfg, logger := c.Settings, s.logger
	st := &stores{checkpoints: c.Checkpoints}
	var local *store.Bolt
	if st.checkpoints == nil {
		// The embedded store keeps responses as long as Redis would (--response-ttl); an hourly
		// sweep deletes older ones so --data-dir does not grow without bound.
		var err error
		local, err = store.OpenBolt(cfg.Store.DataDir, store.BoltOptions{Retention: cfg.Store.ResponseTTL, Logger: logger})
		if err != nil {
			return nil, fmt.Errorf("open store in %s: %w", cfg.Store.DataDir, err)
		}
		s.opened("embedded store", local.Close)
		s.sweep(ctx, boltSweeper{local}) // closed before local: never sweep a closed store
		st.checkpoints = local
	}
	if cfg.Auth.SealKeysFile == "" && cfg.Store.Redis != "" {
		logger.Warn("--redis without --seal-keys: each pod seals with its own random key, so artifacts are not portable")
	}
	st.sealKeys = c.SealKeys
	if st.sealKeys == nil {
		var err error
		if st.sealKeys, err = store.LoadSealKeys(cfg.Auth.SealKeysFile); err != nil {
			return nil, err
		}
	}
	var err error
	if st.sealer, err = store.NewSealer(st.sealKeys, store.SealerOptions{}); err != nil {
		return nil, fmt.Errorf("seal keys: %w", err)
	}
	if local == nil {
		return st, nil
	}
	// Checkpoints in Redis are sealed only with shared keys: a per-process key would make every
	// other pod read them as corrupt.
	var checkpointSealer *store.Sealer
	if cfg.Auth.SealKeysFile != "" || c.SealKeys != nil {
		checkpointSealer = st.sealer
	}
	// Background responses and conversations: in the data directory's file, or in Redis (shared
	// by every replica) with --redis.
	if st.records, err = store.BoltRecords(local); err != nil {
		return nil, fmt.Errorf("open store in %s: %w", cfg.Store.DataDir, err)
	}
	if cfg.Store.Redis == "" {
		return st, nil
	}
	ropts, err := store.ParseRedisURL(string(cfg.Store.Redis))
	if err != nil {
		return nil, fmt.Errorf("--redis: %w", err)
	}
	// go-redis logs failed dials through a process-wide logger; route it to ours at Debug (the
	// store already turns every failure into ErrUnavailable, logged once where it matters).
	redis.SetLogger(redisLogger{logger})
	rc := store.NewRedisClient(ropts)
	s.opened("redis client", rc.Close)
	st.ready = store.NewRedisProbe(rc, 500*time.Millisecond, time.Second).Check
	fallback := store.NewFallback(store.NewRedisCheckpoints(rc, store.RedisCheckpointsOptions{TTL: cfg.Store.ResponseTTL, Sealer: checkpointSealer}), local, store.FallbackOptions{Logger: logger})
	s.opened("redis fallback", fallback.Close) // before local and rc are closed
	st.checkpoints = fallback
	s.Registry.MustRegister(store.NewCheckpointCollector(fallback))
	st.portable = store.NewRedisArtifacts(rc, store.RedisArtifactsOptions{})
	st.records = store.RedisRecords(rc, "")
	logger.Info("sharing responses and artifacts through Redis", "redis", ropts)
	return st, nil
}

// sweep runs the embedded store's sweeper now and hourly until ctx ends or the stack closes.
func (s *Stack) sweep(ctx context.Context, sw sweeper) {
	sweepCtx, stop := context.WithCancel(ctx)
	ticker := time.NewTicker(time.Hour)
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		sweepEvery(sweepCtx, s.logger, sw, ticker.C)
	}()
	s.opened("store sweeper", func() error {
		ticker.Stop()
		stop()
		<-swept
		return nil
	})
}

// boltSweeper sweeps the embedded store: expired responses, then expired background runs and
// conversations.
type boltSweeper struct{ b *store.Bolt }

func (s boltSweeper) Sweep(ctx context.Context) (int, error) {
	n, err := s.b.Sweep(ctx)
	if err != nil {
		return n, err
	}
	m, err := store.SweepRecords(ctx, s.b)
	return n + m, err
}

// sweeper deletes expired records (store.Bolt).
type sweeper interface {
	Sweep(ctx context.Context) (int, error)
}

// sweepEvery sweeps s once now and at every tick until ctx ends.
func sweepEvery(ctx context.Context, logger *slog.Logger, s sweeper, ticks <-chan time.Time) {
	for {
		n, err := s.Sweep(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			logger.Warn("sweep expired responses from the embedded store", "err", err)
		case n > 0:
			logger.Info("swept expired responses from the embedded store", "records", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
	}
}

// redisLogger adapts slog to go-redis's logger.
type redisLogger struct{ l *slog.Logger }

func (r redisLogger) Printf(ctx context.Context, format string, v ...any) {
	r.l.DebugContext(ctx, fmt.Sprintf(format, v...), "component", "redis")
}
