package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/stitchllm/stitch/bench"
	"github.com/stitchllm/stitch/configs"
	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/prepare"
	"github.com/stitchllm/stitch/render"
)

// benchFlags are `stitch bench`'s flags; workload flags override --quick's or the default
// workload's values only when given.
type benchFlags struct {
	quick, simInProcess, noStreaming bool
	fleet                            int
	fleetOnly                        bool
	soak                             time.Duration
	soakWorkers                      int
	soakOnly                         bool
	fleetPolicies                    string
	out, target, modelDir, modes     string
	profileDir                       string
	transports, toolCallParser       string
	reasoningParser, chatTemplate    string
	auditRate                        float64
	prepReps                         int
	w                                bench.Workload
}

func runBench(ctx context.Context, env cliEnv, args []string) error {
	fs := newFlagSet(env, "bench", "[flags]")
	var f benchFlags
	def := bench.DefaultWorkload()
	f.w = def
	fs.BoolVar(&f.quick, "quick", false, "small workload that finishes in under a minute (two sessions, contexts past 100k tokens)")
	fs.StringVar(&f.out, "out", "", "`directory` for bench.json (created); go run ./tools/benchplot DIR draws its plots")
	fs.StringVar(&f.target, "target", "", "drive a running stitch serve at this base `URL` instead of in-process servers (client-side numbers only)")
	fs.StringVar(&f.modes, "modes", "full,canonical,exact", "comma-separated `modes` to compare: full (--no-artifacts), canonical, exact")
	fs.StringVar(&f.transports, "transports", "http", "comma-separated upstream `transports` to run each mode over: http, grpc (the simulator's gRPC engine API; adds the upstream body-decode comparison)")
	fs.StringVar(&f.modelDir, "model-dir", "", "Hugging Face model `directory`; empty: the bundled Qwen3 demo model")
	fs.StringVar(&f.toolCallParser, "tool-call-parser", "", "family `parser` as stitch serve takes it (hermes, llama3_json, mistral, deepseek_v3, …; openai serves --model-dir as gpt-oss through Harmony, also implied by a gpt_oss config.json); the simulator answers in its format; empty: Qwen3 (hermes + qwen3)")
	fs.StringVar(&f.reasoningParser, "reasoning-parser", "", "reasoning `parser` as stitch serve takes it (qwen3, deepseek_r1, …); empty with --tool-call-parser: none")
	fs.StringVar(&f.chatTemplate, "chat-template", "", "Jinja chat template `file` replacing --model-dir's (vLLM's tool templates, as stitch serve takes them)")
	fs.BoolVar(&f.simInProcess, "sim-in-process", false, "run the simulator in this process (its CPU then counts as the proxy's) instead of a `stitch sim` child")
	fs.BoolVar(&f.noStreaming, "no-streaming", false, "skip the streaming overhead and concurrency sweep")
	fs.Float64Var(&f.auditRate, "audit-rate", 0.01, "artifact audit rate during the workload (stitch serve's default)")
	fs.IntVar(&f.prepReps, "prep-reps", 5, "warm repetitions of each sampled turn's preparation, after one cold")
	fs.StringVar(&f.profileDir, "profile-dir", "", "`directory` for a CPU profile per mode of its 100k-token turns sent again whole (turn-<mode>.pprof) and of streams through stitch and a reverse proxy (streaming-stitch.pprof, streaming-reverse-proxy.pprof); go tool pprof reads them")
	fs.IntVar(&f.fleet, "fleet", 0, "also run the fleet comparison on `N` simulated replicas behind a router scoring with llm-d-kv-cache's KV-block index fed by their KV events: policies round_robin, precise_prefix (gateway: stitch → router), sidecar_render (router → stitch via /v1/responses/render) and session_affinity, each in the modes given (0: no fleet run)")
	fs.StringVar(&f.fleetPolicies, "fleet-policies", strings.Join(bench.FleetPolicies, ","), "with --fleet: comma-separated `policies` to compare")
	fs.BoolVar(&f.fleetOnly, "fleet-only", false, "with --fleet: skip the single-replica comparison and the streaming measurement")
	fs.DurationVar(&f.soak, "soak", 0, "also run the memory soak for this `duration` after the rest: short conversations (4 turns of 2 KB user text, max_output_tokens 64, every other streamed) against one canonical-mode proxy at serve's default cache sizes and a fast simulator, peak RSS against the operator guide's formula (0: no soak)")
	fs.IntVar(&f.soakWorkers, "soak-workers", 16, "with --soak: conversations run at once")
	fs.BoolVar(&f.soakOnly, "soak-only", false, "with --soak: skip the mode comparison and the streaming measurement")
	fs.IntVar(&f.w.Sessions, "sessions", def.Sessions, "conversations")
	fs.IntVar(&f.w.Turns, "turns", def.Turns, "requests per conversation")
	fs.IntVar(&f.w.Concurrency, "concurrency", def.Concurrency, "conversations run at once")
	fs.Int64Var(&f.w.Seed, "seed", def.Seed, "workload and simulator seed")
	fs.Float64Var(&f.w.Drift, "drift", def.Drift, "simulator `probability` of a non-canonical tokenization of an answer")
	fs.IntVar(&f.w.ToolOutputTokens, "tool-output-tokens", def.ToolOutputTokens, "mean function_call_output size in `tokens`")
	fs.Float64Var(&f.w.FollowUpRate, "follow-up-rate", def.FollowUpRate, "`probability` that a tool output comes with a nudge to the next tool")
	fs.DurationVar(&f.w.TTFTBase, "ttft-base", def.TTFTBase, "simulator's fixed time to first token")
	fs.DurationVar(&f.w.PrefillPerToken, "prefill-per-token", def.PrefillPerToken, "simulator's prefill time per uncached prompt token")
	fs.DurationVar(&f.w.DecodePerToken, "decode-per-token", def.DecodePerToken, "simulator's time between generated tokens")
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	w := f.w
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	// apply copies a flag's value from src to dst when the flag was given.
	apply := func(name string, dst, src any) {
		if set[name] {
			switch d := dst.(type) {
			case *int:
				*d = *src.(*int)
			case *int64:
				*d = *src.(*int64)
			case *float64:
				*d = *src.(*float64)
			case *time.Duration:
				*d = *src.(*time.Duration)
			}
		}
	}
	if f.quick {
		// Start from the quick workload and apply only the flags given.
		w = bench.QuickWorkload()
		apply("sessions", &w.Sessions, &f.w.Sessions)
		apply("turns", &w.Turns, &f.w.Turns)
		apply("concurrency", &w.Concurrency, &f.w.Concurrency)
		apply("seed", &w.Seed, &f.w.Seed)
		apply("drift", &w.Drift, &f.w.Drift)
		apply("tool-output-tokens", &w.ToolOutputTokens, &f.w.ToolOutputTokens)
		apply("follow-up-rate", &w.FollowUpRate, &f.w.FollowUpRate)
		apply("ttft-base", &w.TTFTBase, &f.w.TTFTBase)
		apply("prefill-per-token", &w.PrefillPerToken, &f.w.PrefillPerToken)
		apply("decode-per-token", &w.DecodePerToken, &f.w.DecodePerToken)
	}
	var modes []bench.Mode
	for _, s := range strings.Split(f.modes, ",") {
		m, err := bench.ParseMode(strings.TrimSpace(s))
		if err != nil {
			fmt.Fprintf(env.stderr, "stitch bench: %v\n", err)
			return errUsage
		}
		modes = append(modes, m)
	}

	var policies []string
	for _, s := range strings.Split(f.fleetPolicies, ",") {
		p, err := bench.ParsePolicy(strings.TrimSpace(s))
		if err != nil {
			fmt.Fprintf(env.stderr, "stitch bench: %v\n", err)
			return errUsage
		}
		policies = append(policies, p)
	}

	var transports []bench.Transport
	for _, s := range strings.Split(f.transports, ",") {
		t, err := bench.ParseTransport(strings.TrimSpace(s))
		if err != nil {
			fmt.Fprintf(env.stderr, "stitch bench: %v\n", err)
			return errUsage
		}
		transports = append(transports, t)
	}

	opts := bench.Options{Workload: w, Modes: modes, Transports: transports, Target: f.target, AuditRate: f.auditRate, PrepReps: f.prepReps, ProfileDir: f.profileDir,
		Progress: env.stderr, Logger: slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if f.target == "" {
		p := configs.ModelProfile{Dir: f.modelDir, ToolCallParser: f.toolCallParser, ReasoningParser: f.reasoningParser, ChatTemplate: f.chatTemplate}
		m, h, names, err := benchModel(p)
		if err != nil {
			if errors.Is(err, family.ErrUnknown) {
				fmt.Fprintf(env.stderr, "stitch bench: %v\n", err)
				return errUsage
			}
			return err
		}
		opts.Model, opts.Harmony, opts.Family = m, h, names
		if h != nil {
			// gpt-oss: Harmony knows low, medium and high only; the simulator runs in process on the
			// gpt-oss tokenizer, as the gpt-oss figures in BENCHMARKS.md were measured.
			opts.Workload.ReasoningOffEvery, opts.Workload.Model = 0, "gptoss"
			w = opts.Workload
			f.simInProcess, f.noStreaming = true, true
		}
		if f.simInProcess {
			opts.Sim = bench.InProcessSim{Model: m, Family: names}
		} else {
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("find the stitch executable for the simulator child: %w", err)
			}
			opts.Sim = bench.ProcessSim{Path: exe, Stderr: env.stderr, ModelDir: f.modelDir, Family: names}
		}
	}
	against := "modes " + f.modes
	if f.target != "" {
		against = "target " + f.target
	}
	fmt.Fprintf(env.stderr, "stitch bench: %d sessions × %d turns, concurrency %d, seed %d, drift %g; %s\n",
		w.Sessions, w.Turns, w.Concurrency, w.Seed, w.Drift, against)
	if f.fleet > 0 && (f.target != "" || f.fleet > 64) {
		fmt.Fprintln(env.stderr, "stitch bench: --fleet needs in-process servers (no --target) and at most 64 replicas")
		return errUsage
	}
	if f.soak < 0 || f.soakWorkers < 1 || (f.soak > 0 && f.target != "") {
		fmt.Fprintln(env.stderr, "stitch bench: --soak needs in-process servers (no --target), a positive duration and --soak-workers ≥ 1")
		return errUsage
	}
	var res *bench.Result
	var err error
	if f.soakOnly && f.soak > 0 {
		res = &bench.Result{Workload: w}
		f.noStreaming, f.fleet = true, 0
	} else if f.fleetOnly && f.fleet > 0 {
		res = &bench.Result{Workload: w}
		f.noStreaming = true
	} else if res, err = bench.Run(ctx, opts); err != nil {
		return err
	}
	if f.fleet > 0 {
		fw := bench.FleetWorkload()
		fw.Seed, fw.Drift, fw.Model = w.Seed, w.Drift, w.Model
		fw.TTFTBase, fw.PrefillPerToken, fw.DecodePerToken = w.TTFTBase, w.PrefillPerToken, w.DecodePerToken
		fw.ReasoningOffEvery = w.ReasoningOffEvery
		// The fleet's own shape (8 sessions × 12 requests), unless the size flags were given.
		apply("sessions", &fw.Sessions, &f.w.Sessions)
		apply("turns", &fw.Turns, &f.w.Turns)
		apply("tool-output-tokens", &fw.ToolOutputTokens, &f.w.ToolOutputTokens)
		apply("follow-up-rate", &fw.FollowUpRate, &f.w.FollowUpRate)
		fo := bench.FleetOptions{Replicas: f.fleet, Workload: fw, Model: opts.Model, Harmony: opts.Harmony, Family: opts.Family,
			Modes: modes, Policies: policies, Progress: env.stderr, Logger: opts.Logger}
		if res.Fleet, err = bench.RunFleet(ctx, fo); err != nil {
			return fmt.Errorf("fleet: %w", err)
		}
	}
	if !f.noStreaming && f.target == "" {
		so := bench.StreamingOptions{Model: opts.Model, Sim: opts.Sim, Workload: w, ProfileDir: f.profileDir}
		if f.quick {
			so.Tokens, so.Reps, so.Levels = 1000, 5, []int{1, 8, 32}
		}
		fmt.Fprintln(env.stderr, "streaming: overhead per token and concurrency sweep…")
		if res.Streaming, err = bench.MeasureStreaming(ctx, so); err != nil {
			return fmt.Errorf("streaming: %w", err)
		}
	}
	if f.soak > 0 {
		fmt.Fprintf(env.stderr, "soak: %d workers for %s…\n", f.soakWorkers, f.soak)
		so := bench.SoakOptions{Duration: f.soak, Workers: f.soakWorkers, Workload: w, Model: opts.Model, Harmony: opts.Harmony,
			Family: opts.Family, Sim: opts.Sim, AuditRate: f.auditRate, Logger: opts.Logger, Progress: env.stderr}
		if res.Soak, err = bench.RunSoak(ctx, so); err != nil {
			return fmt.Errorf("soak: %w", err)
		}
	}
	if len(res.Modes) > 0 {
		if err := res.WriteTable(env.stdout); err != nil {
			return err
		}
	}
	if res.Fleet != nil {
		res.Fleet.WriteFleetTable(env.stdout)
	}
	if res.Soak != nil && len(res.Modes) == 0 {
		fmt.Fprintln(env.stdout, res.Soak.CheckLine()) // WriteTable's checks include it otherwise
	}
	if f.out != "" {
		if err := res.WriteJSON(f.out); err != nil {
			return err
		}
		// The plots are drawn by a separate command (tools/benchplot) so that the server binary
		// does not link the plotting libraries.
		fmt.Fprintf(env.stderr, "wrote %s/bench.json; plots: go run ./tools/benchplot %s\n", f.out, f.out)
	}
	return nil
}

// benchModel loads the bench's model as stitch serve loads profile p: a gpt-oss directory
// (config.json model_type gpt_oss, or --tool-call-parser openai) with its Harmony settings, the
// start date pinned (VLLM_SYSTEM_START_DATE, else 2026-01-05) so a run does not straddle midnight;
// any other directory (or the bundled demo model) with its chat template (or p.ChatTemplate) and
// the family p names. Without parser names the family is zero: Qwen3, with the simulator's own
// default answers (its hermes + Qwen3 think block on every turn), as the bench always ran.
func benchModel(p configs.ModelProfile) (*render.Renderer, *prepare.Harmony, family.Names, error) {
	names, err := profileFamily(p)
	if err != nil {
		return nil, nil, names, err
	}
	if names == harmonyNames {
		m, h, err := loadProfileModel(p, names, os.Getenv)
		if err != nil {
			return nil, nil, names, err
		}
		if h.Options.StartDate == "" {
			h.Options.StartDate = "2026-01-05"
		}
		return m, h, family.Names{}, nil
	}
	if names != (family.Names{}) {
		names = names.WithDefaults() // as serve: a reasoning parser alone goes with the default tool parser
		if err := family.Check(names); err != nil {
			return nil, nil, names, err
		}
	}
	m, _, err := loadProfileModel(p, names, os.Getenv)
	return m, nil, names, err
}
