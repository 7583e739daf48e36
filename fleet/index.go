// Package fleet scores model-server replicas for a prompt with llm-d's own KV-block index
// (github.com/llm-d/llm-d-kv-cache): each replica's KV events (vLLM's ZMQ publisher, or the
// simulator's) feed llm-d's kvevents.Pool, which keeps a kvblock index of which replica holds
// which block; a prompt's token ids become llm-d block keys with llm-d's token processor and are
// scored longest-prefix first, exactly as llm-d's precise-prefix-cache scorer does in the
// router. Nothing here is a home-made router policy: the keys, the index and the scores are
// llm-d's; [Index] only wires them and folds vLLM's cache_salt into the first block's keys the
// way the event pool does (see [Index.BlockKeys]).
//
// # Sections
//
//   - [Index]: the subscriptions, the index and the scorer (docs/design.md, "Fleet").
//   - [Index.BlockKeys]: a prompt's llm-d block keys, for tests that compare prompts block by block.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/llm-d/llm-d-kv-cache/pkg/kvcache"
	"github.com/llm-d/llm-d-kv-cache/pkg/kvcache/kvblock"
	"github.com/llm-d/llm-d-kv-cache/pkg/kvevents"
	"github.com/llm-d/llm-d-kv-cache/pkg/kvevents/engineadapter"
)

// Config configures an [Index]. BlockSize and HashSeed must be the router's (llm-d's
// tokenProcessorConfig): keys are recomputed from token ids, so they need not match vLLM's
// PYTHONHASHSEED, only every party that computes request keys.
type Config struct {
	// BlockSize is the block size in tokens; it must equal the model servers' KV block size (vLLM
	// --block-size). Default 16.
	BlockSize int
	// HashSeed seeds the block-key chain (llm-d's hashSeed). Default "".
	HashSeed string
	// TopicFilter is the ZMQ subscription prefix. Default "kv@" (llm-d's).
	TopicFilter string
}

// ErrNoScore is returned by [Index.Score] for a prompt shorter than one block: no replica can
// hold any of it.
var ErrNoScore = errors.New("fleet: prompt shorter than one block")

// Index is llm-d's KV-block index of a set of replicas, fed by their KV events. Safe for
// concurrent use. Close it to stop the subscriptions and the event workers.
type Index struct {
	cfg     Config
	tp      kvblock.TokenProcessor
	indexer *kvcache.Indexer
	pool    *kvevents.Pool
	subs    *kvevents.SubscriberManager
	cancel  context.CancelFunc
}

// NewIndex builds llm-d's in-memory KV-block index, its longest-prefix scorer, and an event pool
// with vLLM's engine adapter; replicas are added with [Index.Subscribe].
func NewIndex(ctx context.Context, cfg Config) (*Index, error) {
	if cfg.BlockSize <= 0 {
		cfg.BlockSize = 16
	}
	if cfg.TopicFilter == "" {
		cfg.TopicFilter = "kv@"
	}
	tp, err := kvblock.NewChunkedTokenDatabase(&kvblock.TokenProcessorConfig{BlockSizeTokens: cfg.BlockSize, HashSeed: cfg.HashSeed})
	if err != nil {
		return nil, fmt.Errorf("fleet index: token processor: %w", err)
	}
	icfg, err := kvcache.NewDefaultConfig()
	if err != nil {
		return nil, fmt.Errorf("fleet index: config: %w", err)
	}
	indexer, err := kvcache.NewKVCacheIndexer(ctx, icfg, tp)
	if err != nil {
		return nil, fmt.Errorf("fleet index: indexer: %w", err)
	}
	// One worker: events of a replica are applied in order whatever the sharding, and a fleet of
	// simulated replicas publishes far below one core's decoding rate.
	pool := kvevents.NewPool(&kvevents.Config{TopicFilter: cfg.TopicFilter, Concurrency: 1, EngineType: "vllm"},
		indexer.KVBlockIndex(), tp, engineadapter.NewVLLMAdapter())
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	pool.Start(runCtx)
	return &Index{cfg: cfg, tp: tp, indexer: indexer, pool: pool, subs: kvevents.NewSubscriberManager(pool), cancel: cancel}, nil
}

// Subscribe connects llm-d's ZMQ subscriber to a replica's KV event publisher (a bound PUB
// socket, e.g. tcp://127.0.0.1:5557). pod must be the pod identifier of the replica's topic
// ("kv@<pod>@<model>"), which is what scores are keyed by.
func (ix *Index) Subscribe(ctx context.Context, pod, endpoint string) error {
	// The subscription outlives the call: it ends with Close.
	if err := ix.subs.EnsureSubscriber(context.WithoutCancel(ctx), pod, endpoint, ix.cfg.TopicFilter, true); err != nil {
		return fmt.Errorf("fleet index: subscribe %s at %s: %w", pod, endpoint, err)
	}
	return nil
}

// BlockKeys returns llm-d's request keys of tokens' full blocks for model. salt is vLLM's
// cache_salt of the request ("" for none) and lora the LoRA adapter's name ("" for the base
// model; the model name then is the adapter's, as the event pool keys an adapter's blocks).
//
// The extra keys follow the event pool: vLLM publishes each block's extra hash keys (the LoRA
// name on every block, cache_salt on the first) and llm-d-kv-cache v0.9.0's ParseRawExtraKeys
// reads every string among them as a feature that taints the block's key; the router must fold
// the same strings in, or no request with a salt would ever match its own blocks.
func (ix *Index) BlockKeys(tokens []uint32, model, salt, lora string) ([]kvblock.BlockHash, error) {
	if lora != "" {
		model = lora
	}
	keys, err := ix.tp.TokensToKVBlockKeys(kvblock.EmptyBlockHash, tokens, model, ix.extraFeatures(len(tokens), salt, lora))
	if err != nil {
		return nil, fmt.Errorf("fleet index: block keys: %w", err)
	}
	return keys, nil
}

// extraFeatures mirrors what the event pool derives from vLLM's extra_keys (see BlockKeys).
func (ix *Index) extraFeatures(nTokens int, salt, lora string) []*kvblock.BlockExtraFeatures {
	n := nTokens / ix.cfg.BlockSize
	if n == 0 || (salt == "" && lora == "") {
		return nil
	}
	out := make([]*kvblock.BlockExtraFeatures, n)
	for i := range out {
		var hs []kvblock.MMHash
		if lora != "" {
			hs = append(hs, kvblock.MMHash{Hash: lora})
		}
		if i == 0 && salt != "" {
			hs = append(hs, kvblock.MMHash{Hash: salt})
		}
		if len(hs) > 0 {
			out[i] = &kvblock.BlockExtraFeatures{MMHashes: hs}
		}
	}
	return out
}

// Score returns llm-d's longest-prefix score of each pod that holds the prompt's first block (in
// blocks, weighted by medium: 1.0 for GPU), for pods (nil: every pod). Pods holding nothing are
// absent.
func (ix *Index) Score(ctx context.Context, tokens []uint32, model, salt, lora string, pods []string) (map[string]float64, error) {
	if len(tokens) < ix.cfg.BlockSize {
		return nil, ErrNoScore
	}
	if lora != "" {
		model = lora
	}
	scores, err := ix.indexer.ScoreTokens(ctx, tokens, model, pods, ix.extraFeatures(len(tokens), salt, lora))
	if err != nil {
		return nil, fmt.Errorf("fleet index: score: %w", err)
	}
	return scores, nil
}

// Holds reports whether the index records pod as holding every full block of tokens: the events
// of a finished request have been applied. Tests and the bench wait on it instead of sleeping.
func (ix *Index) Holds(ctx context.Context, pod string, tokens []uint32, model, salt, lora string) (bool, error) {
	keys, err := ix.BlockKeys(tokens, model, salt, lora)
	if err != nil || len(keys) == 0 {
		return len(keys) == 0 && err == nil, err
	}
	found, err := ix.indexer.KVBlockIndex().Lookup(ctx, keys, nil)
	if err != nil {
		return false, fmt.Errorf("fleet index: lookup: %w", err)
	}
	for _, k := range keys {
		if !slices.ContainsFunc(found[k], func(e kvblock.PodEntry) bool { return e.PodIdentifier == pod }) {
			return false, nil
		}
	}
	return true, nil
}

// WaitHolds polls [Index.Holds] until it is true or ctx ends (events cross a socket and a worker
// queue; nothing to wait on but the index itself). It returns ctx's error on timeout.
func (ix *Index) WaitHolds(ctx context.Context, pod string, tokens []uint32, model, salt, lora string) error {
	for delay := 200 * time.Microsecond; ; delay = min(2*delay, 20*time.Millisecond) {
		ok, err := ix.Holds(ctx, pod, tokens, model, salt, lora)
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("fleet index: %s does not hold the prompt's blocks: %w", pod, ctx.Err())
		case <-time.After(delay):
		}
	}
}

// Close stops the subscriptions and the event workers.
func (ix *Index) Close(ctx context.Context) {
	ix.subs.Shutdown(ctx)
	ix.pool.Shutdown(ctx)
	ix.cancel()
}
