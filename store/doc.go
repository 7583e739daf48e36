// Package store persists stitch's responses and caches their token ids.
//
// # Checkpoints
//
// A [Checkpoint] is the durable record of one response: request parameters,
// the ids of its input and output [Item]s and of its whole conversation, the
// Response JSON and, in exact mode, the generated token ids. It is the source
// of truth. Items are stored once by id; a checkpoint lists the item ids of
// its conversation in order, so continuing never copies or walks history.
//
// The contract is [Checkpoints] (PutResponse, PutResponseHistory, GetResponse,
// GetItems, DeleteResponse), checked by
// [github.com/stitchllm/stitch/store/storetest.Run] against every
// implementation:
//   - [Bolt]: embedded bbolt file, single process, fsync'd writes (default);
//   - [RedisCheckpoints]: Redis for multi-pod deployments, with TTL, sealed
//     records and items;
//   - [Fallback]: Redis in front of the pod's Bolt file, with a durable replay
//     queue, re-publication when Redis loses its data, and deletions
//     followed across pods (the storage policy of `stitch serve --redis`);
//   - [Memory]: in-process, for tests.
//
// Items are immutable per response (a reused id with other bytes is stored
// under a derived id), deletes are tombstones ([ErrDeleted]), and a corrupt
// record reads as not found ([ErrCorrupt]), counted in [CheckpointStats].
// Every key includes the tenant; another tenant's id reads as [ErrNotFound].
//
// # Artifacts
//
// An [Artifact] caches the exact token ids of a checkpoint with the
// certified-suffix boundary table, the model fingerprint, tenant and expiry.
// It is never the source of truth: any failure to read one (miss, expiry,
// tampering, Redis down) costs a full render and changes no model-visible
// token. Artifacts are encoded compactly (uvarint ids, about 2 bytes per id)
// and sealed by a [Sealer] (HMAC-SHA256 with rotating key ids), which also
// seals generic blobs ([Sealer.Seal], [Sealer.SealPrivate]).
//
// # Tiers
//
// [Tiered] reads an artifact from [L1] (allegro/bigcache, bounded by bytes,
// per process) then from a [PortableCache] ([RedisArtifacts]), filling L1 on
// an L2 hit, and writes through to both. Both tiers hold the same sealed
// bytes, so every read re-verifies the MAC, tenant and expiry.
//
// # Errors
//
// Errors wrap the sentinels in errors.go ([ErrNotFound], [ErrInvalid],
// [ErrExpired], [ErrUnavailable], [ErrInvalidKey], [ErrClosed], [ErrDeleted],
// [ErrCorrupt]); a cancelled
// or expired caller context is returned as the context's error.
//
// # Metrics
//
// The package registers no metrics: [L1.Stats] and [Tiered.Stats] return
// counter snapshots, and [Collector] exports them (stitch_artifact_*) on a
// registry the caller passes in; [CheckpointCollector] does the same for
// checkpoint stores (stitch_checkpoint_*).
package store
