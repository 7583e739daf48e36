// Package stack is stitch's composition root: it assembles a server from its settings and
// releases it, the one assembly that stitch serve, stitch bench and the server's tests share.
//
// # Open, Serve and Close
//
// Open(ctx, Config) builds, in order: the upstream client (vLLM's HTTP API, its gRPC engine API,
// or the built-in simulator when no URL is set; upstream.go), the response store (the Bolt file
// in the data directory swept hourly, behind Redis with --redis; stores.go), the sealer, the
// artifact tiers and caches (NewArtifacts), authentication, each model's runtime
// (NewModelRuntime), the limits and cache salts (limits.go), and the server. Close releases what
// Open opened in reverse order and joins the errors; on an error Open releases what it had
// opened itself. Serve runs stitch serve's HTTP lifecycle on a listener: it serves until its
// context ends, then stops accepting, lets open streams finish and drains background responses
// (Server.Shutdown) within the shutdown timeout. A caller with its own HTTP server (the bench)
// serves Stack.Server itself. Close comes last, after serving stopped.
//
// # Settings and parts
//
// Config.Settings is stitch serve's configuration (package configs); the models come loaded
// (Config.Models: package main loads model directories). A caller that brings its own parts sets
// them in Config instead: stitch bench passes a counting upstream client, an in-memory or shared
// checkpoint store, its seal key, a Redis artifact tier with a key prefix per mode, its cache salt
// and a preparation recorder around each engine (WrapEngine). Each part left nil is built as
// stitch serve builds it.
//
// # Layout
//
// Only package main and the bench import stack; server, prepare, store and the other leaves
// never do (TestPackageLayering). The design: docs/design.md, "Assembly".
package stack
