// Package bench measures what stitch's token artifacts save, side by side in one run: the same
// seeded agentic workload is driven through a stitch server in front of the vLLM simulator once
// per continuation mode — full render every turn, canonical artifacts, exact artifacts — and the
// per-mode numbers are compared (issue 8).
//
// # Workload
//
// [Workload] describes N sessions of T requests each, run with a fixed concurrency. Every
// session offers function tools; a user message names a tool, the simulated model calls it, and
// the client answers with a long function_call_output (source code, JSON records or logs, drawn
// from the seed), often followed by a user nudge that starts the next tool round. Contexts grow
// by a few thousand tokens per round, past 100k tokens in the default run. Half of the sessions
// turn reasoning off (reasoning.effort "none"). Turns are chained with previous_response_id and
// streamed (SSE), as agent SDKs do.
//
// # What is measured
//
// Per mode ([ModeResult]):
//   - the simulator's prefix-cache hit ratio (hits / queries, in tokens, as vLLM's
//     prefix_cache_hits / prefix_cache_queries) and the prompt tokens it had to recompute;
//   - continuation preparation time (the model's prepare.Engine.Prepare: render, artifact lookup,
//     tokenization) per context bucket, measured in a separate sequential pass that re-runs
//     Prepare on the exact inputs of a deterministic sample of the workload's turns, after the
//     workload ran, so concurrency does not blur it (see [Run]);
//   - the whole turn's CPU (turn_cpu_ms_p50: parse, store reads, preparation, upstream request,
//     stream handling, persistence), measured in a serial pass after the workload that sends
//     the sampled continuations again over a raw connection and reads this process's CPU clock
//     around each (see timeTurns), down the workload's path (the hot entry) and the truly cold
//     ones (the artifact read back from L1, and from Redis), with the preparation's physical
//     bound (prep_bound_ms_p50: tokenizing only the text the turn adds to the previous prompt);
//   - peak RSS against the operator guide's memory formula for the run's settings (memory);
//   - time to first token as the client sees it (request sent → first *.delta event), which
//     adds the proxy's preparation to the simulator's latency model;
//   - the proxy's CPU seconds per turn (getrusage of this process, which runs the proxy and the
//     load driver; the simulator runs in a child process when [Options.Sim] is a [ProcessSim]);
//   - bytes from clients to the proxy and from the proxy to the upstream;
//   - the peak resident set size of this process during the mode (Linux: reset through
//     /proc/self/clear_refs before each mode).
//
// [MeasureStreaming] adds the proxy's streaming overhead per token and the most concurrent
// streams it holds while the p99 gap between tokens stays under a bound.
//
// # Output
//
// [Result] is written as bench.json ([Result.WriteJSON]) and printed as a table
// ([Result.WriteTable]); tools/benchplot draws its PNG plots from bench.json, outside the stitch
// binary. BENCHMARKS.md at the repository root records a run.
package bench
