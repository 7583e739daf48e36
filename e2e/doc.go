// Package e2e holds the end-to-end suites of stitch: they build the `stitch` binary, start
// `stitch sim` (the vLLM simulator) and `stitch serve` in front of it as real processes on
// loopback ports, and drive them with real OpenAI clients.
//
// # Suites
//
//   - TestGoSDK: the official Go SDK (github.com/openai/openai-go/v3), plus raw HTTP requests
//     where a client's exact bytes matter (Codex-style full-history replays, stream invariants).
//   - TestNode/openai: e2e/node/openai_sdk.mjs with the `openai` npm package.
//   - TestNode/agents: e2e/node/agents_sdk.mjs with `@openai/agents` (tracing disabled, a
//     fetch guard that fails any request leaving loopback).
//   - TestAgentClients: the Agents SDK (agents_sdk.mjs) and the Codex CLI (`codex exec`, then
//     `codex exec resume`; @openai/codex in e2e/node) on a Qwen3-Coder, a Llama 3.3 and a
//     gpt-oss profile of the sim (on gpt-oss openai_sdk.mjs too), in canonical and exact mode,
//     and Codex alone on the Qwen3 demo profile (its continuations resolve artifacts through
//     inline reseed). Every prompt the sim received equals the reference render of the
//     conversation the client sent (a --no-artifacts serve; for gpt-oss `stitch render
//     --responses`). Codex runs with temporary CODEX_HOME, HOME and working directory, an empty
//     PATH, a read-only sandbox, and HTTPS_PROXY pointing at a trap that fails the test on any
//     connection beyond loopback.
//   - TestFamilies: the families matrix — per model family of the README's table, its own sim
//     and two serves (artifacts, --no-artifacts) driven by the Go SDK and e2e/node/families.mjs
//     (stream and non-stream × tool round trip, parallel calls, reasoning on/off, forced
//     tool_choice, a malformed call); the two serves' recorded prompts must be identical.
//   - TestModelsPassThrough: vLLM's /v1/models through stitch.
//   - TestServeRestart: stored responses survive a restart of serve on the same data dir;
//     SIGTERM exits 0.
//   - TestTransportsSDKSuites: TestGoSDK's scenarios and TestNode's scripts over the HTTP and the
//     gRPC upstream (one recording sim each); every recorded generation must be identical.
//   - TestAnalyzeStream, TestParseSSE: self-tests of the stream checker (no server; they also
//     run under -short).
//
// The stream checks follow the project's client facts (FACTS-clients.md in the shared design
// documents, outside this repository): every rule there broke at least one client.
//
// # Running
//
// All server tests skip under `go test -short`. While `stitch serve` or `stitch sim` still answers
// "not implemented yet" the suites skip; any other startup failure fails them. The Node
// suites need `node` and e2e/node/node_modules (`make e2e-deps`); without node they skip,
// except under CI=true where they fail.
//
// Environment knobs:
//   - STITCH_E2E_BASE_URL=http://host:port: drive an already running stitch instead of
//     building and starting one (no sim, no build).
//   - STITCH_E2E_BIN=/path/to/stitch: use a prebuilt binary instead of `go build`.
//   - STITCH_E2E_UPSTREAM=grpc: the shared stack's serve reaches its sim over the gRPC engine
//     API (`--upstream grpc://`, the sim's `--grpc-listen`) instead of HTTP. Tests that start
//     their own serve keep HTTP (several tenants are refused on gRPC by design).
//   - STITCH_E2E_RACE=1: build stitch with -race; any "WARNING: DATA RACE" a process prints
//     fails the test that was running. Off by default: race-built processes start ~10x slower.
//
// The package has no non-test code; this file only documents it.
package e2e
