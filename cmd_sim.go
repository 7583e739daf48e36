package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/stitchllm/stitch/configs/demomodel"
	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/modeldir"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/render/bpe"
	"github.com/stitchllm/stitch/sim"
)

// simFlags are `stitch sim`'s flags; the defaults model a mid-size model on one GPU.
type simFlags struct {
	listen, modelDir, name, record, logLevel string
	grpcListen                               string
	kvEvents, kvEventsTopic                  string
	layout                                   string
	hybrid                                   bool
	maxBatchedTokens                         int
	toolCallParser, reasoningParser          string
	streamInterval                           int
	loraModules                              string
	maxModelLen, blockSize, kvBlocks         int
	seed                                     int64
	outputLen                                int
	drift                                    float64
	fast                                     bool
	ttftBase                                 time.Duration
	prefillUS, decodeUS                      float64
	failRate, dropRate                       float64
	dropAfter                                int
	firstByteDelay, shutdownTimeout          time.Duration
}

// supportedFamilies lists the registered tool_call_parser+reasoning_parser pairs (package
// family's registry, the one table of them).
func supportedFamilies() string {
	var pairs []string
	for _, n := range family.Supported() {
		pairs = append(pairs, n.ToolCallParser+"+"+cmp.Or(n.ReasoningParser, "none"))
	}
	return strings.Join(pairs, ", ")
}

func runSim(ctx context.Context, env cliEnv, args []string) error {
	return runSimReady(ctx, env, args, nil)
}

// runSimReady is runSim; ready, when set, gets the bound address once the server accepts
// connections (tests listen on port 0).
func runSimReady(ctx context.Context, env cliEnv, args []string, ready func(addr string)) error {
	fs := newFlagSet(env, "sim", "[--listen ADDR] [--model-dir DIR] [--served-model-name NAME] [flags]")
	var f simFlags
	fs.StringVar(&f.listen, "listen", "127.0.0.1:8000", "`address` to serve the vLLM API on")
	fs.StringVar(&f.grpcListen, "grpc-listen", "", "`address` to serve vLLM's gRPC engine API on as well (vllm serve --grpc); empty: HTTP only")
	fs.IntVar(&f.streamInterval, "stream-interval", 1, "generated `ids` per stream chunk (vLLM's --stream-interval)")
	fs.StringVar(&f.modelDir, "model-dir", "", "Hugging Face model `directory` (tokenizer.json, tokenizer_config.json); empty: the bundled Qwen3 demo model")
	fs.StringVar(&f.name, "served-model-name", "", "model id clients must send (default: the model directory's base name, or "+demomodel.Name+")")
	fs.StringVar(&f.loraModules, "lora-modules", "", "comma-separated LoRA adapter `names` (vLLM's name=path also accepted; the path is ignored): requests may name them as model; they never share KV blocks with the base")
	fs.IntVar(&f.maxModelLen, "max-model-len", 32768, "context length in `tokens`; longer prompts get 400")
	fs.IntVar(&f.blockSize, "block-size", 16, "KV block size in `tokens` (prefix-cache granularity)")
	fs.StringVar(&f.toolCallParser, "tool-call-parser", "", "`parser` whose format the answers' tool calls use, as vLLM names it, with --reasoning-parser one of stitch serve's families ("+supportedFamilies()+"); openai (Harmony) is the default for a gpt_oss config.json or a Harmony tokenizer (empty: hermes with Qwen3 thinking)")
	fs.StringVar(&f.reasoningParser, "reasoning-parser", "", "`parser` whose reasoning block the answers write (see --tool-call-parser; Harmony always reasons) (empty: none with --tool-call-parser)")
	fs.BoolVar(&f.hybrid, "hybrid", false, "model a hybrid (linear + full attention) model's prefix cache: hits end only where a recurrent state was saved (use with a large --block-size, e.g. 528 or more for Qwen3.5/3.6)")
	fs.IntVar(&f.maxBatchedTokens, "max-num-batched-tokens", 8192, "with --hybrid: prefill chunk in `tokens` (vLLM's --max-num-batched-tokens); each chunk's end saves a recurrent state")
	fs.StringVar(&f.layout, "vllm-layout", "newest", "vLLM release whose response shapes and error messages to copy: newest or 0.11")
	fs.IntVar(&f.kvBlocks, "kv-blocks", 65536, "KV cache capacity in `blocks`; unreferenced blocks are evicted LRU beyond it")
	fs.Int64Var(&f.seed, "seed", 0, "seed of the scripted model (requests without a seed), drift and fault draws")
	fs.IntVar(&f.outputLen, "output-len", 64, "mean length in `tokens` of a plain text answer (uniform in [L/2, 3L/2])")
	fs.Float64Var(&f.drift, "drift", 0, "`probability` that an answer is sent with a non-canonical tokenization (\"\\n\",\"\\n\" for \"\\n\\n\")")
	fs.BoolVar(&f.fast, "fast", false, "turn every latency-model sleep off (tests, throughput benchmarks)")
	fs.DurationVar(&f.ttftBase, "ttft-base", 20*time.Millisecond, "fixed part of the time to first token")
	fs.Float64Var(&f.prefillUS, "prefill-us-per-token", 100, "prefill time per uncached prompt token, in `microseconds`")
	fs.Float64Var(&f.decodeUS, "decode-us-per-token", 10000, "time between generated tokens, in `microseconds`")
	fs.StringVar(&f.record, "record", "", "append one JSON line per generation request to `file`")
	fs.Float64Var(&f.failRate, "fail-rate", 0, "`probability` that a generation request fails with HTTP 500")
	fs.IntVar(&f.dropAfter, "drop-after", 0, "with --drop-rate: close the connection after this many `tokens`")
	fs.Float64Var(&f.dropRate, "drop-rate", 0, "`probability` that a generation is cut off after --drop-after tokens")
	fs.DurationVar(&f.firstByteDelay, "first-byte-delay", 0, "delay before the response headers of every generation request (applies with --fast too)")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long running requests may finish after SIGTERM")
	fs.StringVar(&f.kvEvents, "kv-events", "", "publish vLLM's KV cache events (BlockStored, BlockRemoved, AllBlocksCleared; msgpack over ZMQ PUB, as --kv-events-config's zmq publisher) on this `endpoint`: tcp://*:5557 binds, tcp://HOST:PORT connects; empty: none")
	fs.StringVar(&f.kvEventsTopic, "kv-events-topic", "", "`topic` of every KV event message; empty: kv@<listen address>@<served model name>, the form llm-d's subscribers read the pod and model from")
	fs.StringVar(&f.logLevel, "log-level", "info", "log `level`: debug, info, warn or error (logs go to stderr)")
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		fmt.Fprintf(env.stderr, "stitch sim: --log-level: %v\n", err)
		return errUsage
	}
	logger := slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: level}))
	opts, closeRecord, err := f.options(logger)
	if err != nil {
		return err
	}
	defer closeRecord()
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if f.kvEvents != "" {
		topic := f.kvEventsTopic
		if topic == "" {
			topic = sim.KVEventsTopic(ln.Addr().String(), opts.ServedModelName)
		}
		pub, err := sim.NewZMQPublisher(ctx, sim.ZMQPublisherOptions{Endpoint: f.kvEvents, Topic: topic, Logger: logger})
		if err != nil {
			ln.Close()
			return err
		}
		defer pub.Close()
		opts.KVEvents = pub
		logger.Info("publishing KV events", "endpoint", f.kvEvents, "bound", pub.Addr(), "topic", topic)
	}
	s, err := sim.New(opts)
	if err != nil {
		ln.Close()
		return err
	}
	logger.Info("vLLM simulator listening", "addr", ln.Addr().String(), "model", opts.ServedModelName,
		"max_model_len", opts.MaxModelLen, "kv_blocks", opts.KVBlocks, "fast", opts.Fast, "chat", opts.Renderer != nil)
	if f.grpcListen != "" {
		stop, err := serveSimGRPC(logger, s, f.grpcListen)
		if err != nil {
			ln.Close()
			return err
		}
		defer stop()
	}
	if ready != nil {
		ready(ln.Addr().String())
	}
	return serveSim(ctx, logger, &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}, ln, f.shutdownTimeout)
}

// options turns the flags into sim.Options, loading the model. The returned func closes the
// record file.
func (f *simFlags) options(logger *slog.Logger) (sim.Options, func(), error) {
	opts := sim.Options{
		ServedModelName: f.name, MaxModelLen: f.maxModelLen, BlockSize: f.blockSize, KVBlocks: f.kvBlocks,
		Seed: f.seed, OutputLen: f.outputLen, Drift: f.drift, Fast: f.fast, TTFTBase: f.ttftBase,
		PrefillPerToken: microseconds(f.prefillUS), DecodePerToken: microseconds(f.decodeUS),
		FailRate: f.failRate, DropAfter: f.dropAfter, DropRate: f.dropRate, FirstByteDelay: f.firstByteDelay,
		StreamInterval: f.streamInterval, Logger: logger, Hybrid: f.hybrid, PrefillChunk: max(f.maxBatchedTokens, 0),
		ToolCallParser: f.toolCallParser, ReasoningParser: f.reasoningParser,
	}
	switch f.layout {
	case "newest", "":
	case sim.Layout011:
		opts.Layout = sim.Layout011
	default:
		return opts, func() {}, fmt.Errorf("--vllm-layout %q: want newest or %s", f.layout, sim.Layout011)
	}
	for _, m := range strings.Split(f.loraModules, ",") {
		if name, _, _ := strings.Cut(strings.TrimSpace(m), "="); name != "" {
			opts.LoRAModules = append(opts.LoRAModules, name)
		}
	}
	nop := func() {}
	if f.maxModelLen <= 0 || f.blockSize <= 0 || f.kvBlocks <= 0 || f.outputLen <= 0 || f.prefillUS < 0 || f.decodeUS < 0 {
		return opts, nop, errors.New("--max-model-len, --block-size, --kv-blocks and --output-len must be positive, latencies not negative")
	}
	root := f.modelDir
	if root == "" {
		root = demomodel.Name
	}
	if opts.ServedModelName == "" {
		opts.ServedModelName = filepath.Base(filepath.Clean(root))
	}
	opts.ModelRoot = root
	d, err := modeldir.Open(f.modelDir)
	if err != nil {
		return opts, nop, err
	}
	tok, renderer, err := loadSimModel(d, logger)
	if err != nil {
		return opts, nop, err
	}
	opts.Tokenizer, opts.Renderer = tok, renderer
	cfg, err := d.Config()
	if err != nil {
		return opts, nop, err
	}
	opts.VocabSize = cfg.VocabSize
	if cfg.Harmony && opts.ToolCallParser == "" {
		opts.ToolCallParser = family.HarmonyNames().ToolCallParser // vLLM serves gpt_oss through Harmony
	}
	if f.record == "" {
		return opts, nop, nil
	}
	rf, err := os.OpenFile(f.record, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return opts, nop, fmt.Errorf("open record file: %w", err)
	}
	opts.Record = rf
	return opts, func() {
		if err := rf.Close(); err != nil {
			logger.Warn("close record file", "err", err)
		}
	}, nil
}

// loadSimModel loads the tokenizer and chat template of a model directory. A directory whose
// template cannot be loaded still serves the token path: chat endpoints then answer 501.
func loadSimModel(d *modeldir.Dir, logger *slog.Logger) (*bpe.Tokenizer, sim.ChatRenderer, error) {
	m, err := d.Renderer(render.Options{})
	if err == nil {
		return m.Tokenizer(), sim.ModelRenderer(m), nil
	}
	tok, terr := d.Tokenizer()
	if terr != nil {
		return nil, nil, errors.Join(err, terr)
	}
	logger.Warn("chat template unavailable: /v1/chat/completions and chat /tokenize answer 501", "err", err)
	return tok, nil, nil
}

func microseconds(us float64) time.Duration { return time.Duration(us * float64(time.Microsecond)) }

// serveSim serves until ctx ends (SIGTERM/SIGINT from main), then shuts down gracefully.
func serveSim(ctx context.Context, logger *slog.Logger, hs *http.Server, ln net.Listener, timeout time.Duration) error {
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down", "timeout", timeout)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
