package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"
)

// Tokenizer is what the simulator needs from the model's tokenizer. *bpe.Tokenizer implements it;
// implementations must be safe for concurrent use.
type Tokenizer interface {
	// Encode tokenizes text without adding special tokens (added tokens are split out first).
	Encode(text string) []uint32
	// Decode renders ids as text, special tokens included; invalid UTF-8 becomes U+FFFD.
	Decode(ids []uint32) string
	// TokenID looks up an added token's or a vocabulary token's id.
	TokenID(token string) (uint32, bool)
	// IsSpecial reports whether id is a special added token (dropped from text by
	// skip_special_tokens).
	IsSpecial(id uint32) bool
}

// StreamDecoder turns ids into text incrementally, holding bytes back until UTF-8 is whole. One
// is made per generation and used by one goroutine.
type StreamDecoder interface {
	// Next returns the text completed by id ("" while a UTF-8 sequence is incomplete).
	Next(id uint32) string
	// Flush returns whatever is held (incomplete sequences as U+FFFD).
	Flush() string
}

// StreamingTokenizer is an optional capability of a [Tokenizer]: its own incremental decoder. When
// the tokenizer lacks it, the simulator decodes pending ids with Decode until they end in whole
// UTF-8.
type StreamingTokenizer interface {
	NewStreamDecoder() StreamDecoder
}

// ChatRenderer renders a chat request with the model's chat template. body is the request's JSON
// as vLLM receives it (messages, tools, add_generation_prompt, continue_final_message,
// chat_template_kwargs, …); the renderer reads the fields it needs. It must be safe for concurrent
// use. An error is reported to the client as 400.
type ChatRenderer interface {
	RenderChat(ctx context.Context, body []byte) (string, error)
}

// ChatRendererFunc adapts a function to [ChatRenderer].
type ChatRendererFunc func(ctx context.Context, body []byte) (string, error)

// RenderChat calls f.
func (f ChatRendererFunc) RenderChat(ctx context.Context, body []byte) (string, error) {
	return f(ctx, body)
}

// Options configure a [Server]. The zero value of every field but Tokenizer works: no latency, no
// faults, defaults as documented.
type Options struct {
	// Tokenizer is the model's tokenizer. Required.
	Tokenizer Tokenizer
	// Renderer renders /v1/chat/completions and /tokenize chat requests. Nil: those answer 501.
	Renderer ChatRenderer

	// ToolCallParser and ReasoningParser name the family whose output format the scripted model
	// writes, as vLLM names its parsers (--tool-call-parser, --reasoning-parser): a pair package
	// family registers (family.Supported; New refuses any other), or openai for Harmony. Both
	// empty: the default family's hermes calls and a Qwen3 think block on every fresh chat turn;
	// only a reasoning parser: the default tool parser with it (family.Names.WithDefaults). A tool parser without a reasoning parser writes
	// no reasoning (it only closes a block the template opened). Every marker a format writes must
	// be a token of the tokenizer, else New refuses the parser.
	ToolCallParser, ReasoningParser string

	// ServedModelName is the model id requests must name (or omit). Default "qwen3".
	ServedModelName string
	// ModelRoot is reported as "root" in /v1/models (vLLM reports the model path). Default
	// ServedModelName.
	ModelRoot string
	// LoRAModules are LoRA adapter names requests may give as "model". An adapter generates like
	// the base model but never shares KV blocks with it or with another adapter (vLLM's LoRA extra
	// hash key). Default none.
	LoRAModules []string
	// MaxModelLen is the context length in tokens: longer prompts are refused with 400, and
	// max_tokens may not run past it. Default 32768.
	MaxModelLen int

	// BlockSize is the KV block size in tokens: prefix-cache hits are whole blocks. Default 16
	// (vLLM's default). Hybrid models use far larger blocks (vLLM raises the attention block size
	// to the linear-attention state's page size: 528 tokens and more for Qwen3.5/3.6); set it
	// together with Hybrid.
	BlockSize int
	// Hybrid models a hybrid (linear attention + full attention) model under vLLM's "align"
	// prefix caching: a prefix is reusable only up to a block boundary at which the recurrent
	// state was saved — the last full block of each prefill and every boundary crossed while
	// decoding — so a prompt that diverges from a cached one mid-way reuses less than with full
	// attention alone. Default false (full attention: every cached leading block is a hit).
	Hybrid bool
	// PrefillChunk is vLLM's --max-num-batched-tokens as it matters to Hybrid: a prefill longer
	// than it runs in chunks of floor(PrefillChunk/BlockSize) blocks, each saving the state at
	// its end. Default 0: every prefill is one chunk.
	PrefillChunk int
	// VocabSize is the model's vocab_size (config.json). Prompt token ids are rejected only above
	// max(tokenizer max id, VocabSize-1), as vLLM does (the embedding matrix may be larger than
	// the tokenizer: Qwen3 151936 vs 151669). Default 0: the tokenizer's max id alone.
	VocabSize int
	// Layout selects the vLLM release whose response shapes and messages the simulator copies:
	// "" (default) the newest (stream chunks without "usage": null, cached_tokens 0 reported as
	// 0, max_tokens null on /v1/completions meaning 16, the input_tokens context-length error,
	// cache_salt at most 128 characters without @ / \ or NUL); [Layout011] vLLM 0.11's.
	Layout string
	// KVEvents receives the prefix cache's block events as vLLM publishes them with
	// --kv-events-config (BlockStored, BlockRemoved, AllBlocksCleared); a [*ZMQPublisher] sends
	// them to a router's KV-block index. Nil: no events.
	KVEvents KVEventSink
	// KVBlocks is the KV cache capacity in blocks; unreferenced blocks are evicted LRU beyond it.
	// Default 65536 (1 Mi tokens at block size 16). Lower it to test eviction.
	KVBlocks int

	// Seed seeds the scripted model for requests without a seed, and the fault and drift draws.
	Seed int64
	// OutputLen is the mean length in tokens of a plain text answer; lengths are drawn uniformly
	// from [OutputLen/2, 3*OutputLen/2]. Default 64.
	OutputLen int
	// Drift is the probability (0…1) that an answer is sent with a non-canonical tokenization of
	// its text (drawn from the answer's seed, so still deterministic). Default 0.
	Drift float64

	// Fast turns every sleep of the latency model off (TTFTBase, PrefillPerToken, DecodePerToken).
	Fast bool
	// TTFTBase is the fixed part of the time to first token. Default 0.
	TTFTBase time.Duration
	// PrefillPerToken is the prefill time per uncached prompt token. Default 0.
	PrefillPerToken time.Duration
	// DecodePerToken is the time between two generated tokens. Default 0.
	DecodePerToken time.Duration

	// FailRate is the probability (0…1) that a generation request fails with HTTP 500.
	FailRate float64
	// DropAfter and DropRate: with probability DropRate a generation is cut off after DropAfter
	// tokens by closing the connection (no finish chunk, no [DONE]). DropRate 0 disables drops.
	DropAfter int
	DropRate  float64
	// FirstByteDelay delays the response headers of every generation request (applied even with
	// Fast: it is a fault, not latency).
	FirstByteDelay time.Duration

	// StreamInterval is the number of generated ids per stream chunk (vLLM's --stream-interval;
	// speculative decoding batches ids too). Default 1.
	StreamInterval int

	// Record, when set, receives one JSON line per generation request: endpoint,
	// prompt_token_ids, cache_salt, max_tokens, cached_tokens, output_token_ids, finish_reason.
	// Writes are serialized by the Server; it never closes the writer.
	Record io.Writer
	// Logger receives one Info line per generation (finish reason, token counts, cached tokens,
	// TTFT) and a warning when a record line cannot be written. Default: discard.
	Logger *slog.Logger
}

// Layout011 is [Options.Layout] for vLLM 0.11's response shapes and messages.
const Layout011 = "0.11"

// legacy reports whether the 0.11 layout is selected.
func (o *Options) legacy() bool { return o.Layout == Layout011 }

func (o *Options) applyDefaults() {
	if o.ServedModelName == "" {
		o.ServedModelName = "qwen3"
	}
	if o.ModelRoot == "" {
		o.ModelRoot = o.ServedModelName
	}
	if o.MaxModelLen == 0 {
		o.MaxModelLen = 32768
	}
	if o.BlockSize == 0 {
		o.BlockSize = 16
	}
	if o.KVBlocks == 0 {
		o.KVBlocks = 65536
	}
	if o.OutputLen == 0 {
		o.OutputLen = 64
	}
	if o.StreamInterval == 0 {
		o.StreamInterval = 1
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

func (o *Options) validate() error {
	var errs []error
	if o.Tokenizer == nil {
		errs = append(errs, ErrNoTokenizer)
	}
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrBadOptions}, args...)...))
		}
	}
	check(o.MaxModelLen > 0, "max model len %d must be positive", o.MaxModelLen)
	check(o.BlockSize > 0, "block size %d must be positive", o.BlockSize)
	check(o.KVBlocks > 0, "kv blocks %d must be positive", o.KVBlocks)
	check(o.OutputLen > 0, "output len %d must be positive", o.OutputLen)
	for _, p := range []struct {
		name string
		v    float64
	}{{"drift", o.Drift}, {"fail rate", o.FailRate}, {"drop rate", o.DropRate}} {
		check(p.v >= 0 && p.v <= 1, "%s %v must be within [0, 1]", p.name, p.v)
	}
	check(o.Layout == "" || o.Layout == Layout011, "layout %q must be empty (newest) or %q", o.Layout, Layout011)
	check(o.PrefillChunk >= 0, "prefill chunk %d must not be negative", o.PrefillChunk)
	check(o.VocabSize >= 0, "vocab size %d must not be negative", o.VocabSize)
	check(o.StreamInterval > 0, "stream interval %d must be positive", o.StreamInterval)
	check(o.DropAfter >= 0, "drop after %d must not be negative", o.DropAfter)
	check(o.TTFTBase >= 0 && o.PrefillPerToken >= 0 && o.DecodePerToken >= 0 && o.FirstByteDelay >= 0,
		"durations must not be negative")
	return errors.Join(errs...)
}
