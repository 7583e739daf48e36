package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// BoltOptions configures the embedded checkpoint store. The zero value is
// ready to use.
type BoltOptions struct {
	// FileName is the database file inside the data directory. Empty means
	// "checkpoints.db".
	FileName string
	// OpenTimeout bounds the wait for the file lock held by another process
	// (bolt allows one process per file). Zero means 5s.
	OpenTimeout time.Duration
	// BatchDelay is how long a PutResponse waits for concurrent writers to
	// share its transaction and fsync (bbolt MaxBatchDelay). Zero means 2ms;
	// raise it for many concurrent writers on slow disks.
	BatchDelay time.Duration
	// Retention is how long a checkpoint is kept after it was stored, and an
	// item after the last checkpoint referencing it was stored (the Redis
	// store's TTL, for the embedded store). Sweep deletes what is older. Zero
	// keeps everything forever and skips the per-item bookkeeping.
	Retention time.Duration
	// Now is the clock for Retention. Nil means time.Now.
	Now func() time.Time
	// Logger receives open/close events. Nil discards them.
	Logger *slog.Logger
}

// Bolt is the embedded checkpoint store: one bbolt file in a data directory,
// for a single process. Writes are fsync'd before PutResponse returns, so a
// stored response survives a crash or restart. Concurrent PutResponse calls
// are coalesced into shared transactions (one fsync for many writers).
//
// Records are kept until Sweep removes them (see BoltOptions.Retention);
// DeleteResponse replaces a checkpoint record with a tombstone but keeps its
// items, which later checkpoints of the conversation may still reference.
// With a Fallback in front, the same file also holds the durable replay
// queue (bolt_local.go).
//
// Bolt is safe for concurrent use. Keys are tenant+"\x00"+id.
type Bolt struct {
	db        *bolt.DB
	logger    *slog.Logger
	retention time.Duration
	now       func() time.Time
	counters  checkpointCounters
}

var (
	boltResponses = []byte("responses")
	boltItems     = []byte("items")
	// boltTouched maps an item key to the unix second of the last PutResponse
	// that referenced it (only maintained when Retention is set).
	boltTouched = []byte("items_touched")
	// boltStored maps a response key to the unix second it was stored.
	boltStored = []byte("responses_stored")
	// boltTombstones maps a deleted response's key to the unix second of
	// its deletion; swept after Retention like the responses.
	boltTombstones = []byte("tombstones")
	// boltReplay is the Fallback's replay queue: sequence number (8 bytes,
	// big-endian) to operation (see bolt_local.go).
	boltReplay = []byte("replay")
	// boltMeta holds the Fallback's cursors (deletions seen, epoch
	// re-published).
	boltMeta = []byte("meta")
)

// OpenBolt opens (creating if needed, mode 0700/0600) the store in dir.
func OpenBolt(dir string, opts BoltOptions) (*Bolt, error) {
	if opts.FileName == "" {
		opts.FileName = "checkpoints.db"
	}
	if opts.OpenTimeout <= 0 {
		opts.OpenTimeout = 5 * time.Second
	}
	if opts.BatchDelay <= 0 {
		opts.BatchDelay = 2 * time.Millisecond
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open bolt store: %w", err)
	}
	path := filepath.Join(dir, opts.FileName)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.OpenTimeout})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("open bolt store %s: the file is locked by another process "+
			"(another stitch using the same --data-dir? each process needs its own): "+
			"gave up waiting for the lock after %v: %w", path, opts.OpenTimeout, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open bolt store %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{boltResponses, boltItems, boltTouched, boltStored, boltTombstones, boltReplay, boltMeta} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open bolt store %s: create buckets: %w", path, err)
	}
	db.MaxBatchDelay = opts.BatchDelay
	logger.Info("checkpoint store opened", "backend", "bolt", "path", path)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Bolt{db: db, logger: logger, retention: opts.Retention, now: opts.Now}, nil
}

// Close closes the file. Calls after Close fail with ErrClosed.
func (s *Bolt) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close bolt store: %w", err)
	}
	return nil
}

// PutResponse stores items and cp in one transaction and returns once it is
// on disk. It replaces a checkpoint with the same tenant and id; items are
// immutable (see Checkpoints). A deleted id fails with ErrDeleted.
func (s *Bolt) PutResponse(ctx context.Context, cp *Checkpoint, items []Item) error {
	return s.put(ctx, cp, items, false)
}

// PutResponseHistory is PutResponse: the store already holds the history.
func (s *Bolt) PutResponseHistory(ctx context.Context, cp *Checkpoint, items, _ []Item) error {
	return s.put(ctx, cp, items, false)
}

// put is PutResponse that, with queue, also appends the write to the replay
// queue in the same transaction (see Fallback).
func (s *Bolt) put(ctx context.Context, cp *Checkpoint, items []Item, queue bool) error {
	if err := checkPut(cp, items); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("put response %q: %w", cp.ID, err)
	}
	var stamp []byte
	if s.retention > 0 {
		stamp = binary.BigEndian.AppendUint64(nil, uint64(s.now().Unix()))
	}
	// Batch coalesces concurrent writers; it may run the function more than
	// once if a batch partner fails, so it starts from the caller's values
	// every time.
	var diverted int
	err := s.db.Batch(func(tx *bolt.Tx) error {
		diverted = 0
		key := []byte(localKey(cp.Tenant, cp.ID))
		if tx.Bucket(boltTombstones).Get(key) != nil {
			return ErrDeleted
		}
		ib := tx.Bucket(boltItems)
		renamed := map[int]string{}
		for i, it := range items {
			if cur := ib.Get([]byte(localKey(cp.Tenant, it.ID))); cur != nil && !bytes.Equal(cur, it.Data) {
				renamed[i] = divertedID(it.ID, it.Data)
			}
		}
		c, its := cp, items
		if len(renamed) > 0 {
			c, its = divert(cp, items, renamed)
			diverted = len(renamed)
		}
		rec, err := encodeCheckpoint(c)
		if err != nil {
			return err
		}
		for _, it := range its {
			if err := ib.Put([]byte(localKey(c.Tenant, it.ID)), it.Data); err != nil {
				return fmt.Errorf("item %q: %w", it.ID, err)
			}
		}
		if stamp != nil {
			if err := s.touch(tx, c, its, stamp); err != nil {
				return err
			}
		}
		if queue {
			if err := enqueue(tx, opPut, c.Tenant, c.ID); err != nil {
				return err
			}
		}
		return tx.Bucket(boltResponses).Put(key, rec)
	})
	if err != nil {
		return fmt.Errorf("put response %q: %w", cp.ID, boltErr(err))
	}
	s.counters.diverted.Add(uint64(diverted))
	return nil
}

// touch records stamp as the last-referenced time of every item of the
// conversation and as the stored time of the checkpoint.
func (s *Bolt) touch(tx *bolt.Tx, cp *Checkpoint, items []Item, stamp []byte) error {
	tb := tx.Bucket(boltTouched)
	for _, it := range items {
		if err := tb.Put([]byte(localKey(cp.Tenant, it.ID)), stamp); err != nil {
			return err
		}
	}
	for _, id := range cp.ConversationItemIDs {
		if validStoredID(id) {
			if err := tb.Put([]byte(localKey(cp.Tenant, id)), stamp); err != nil {
				return err
			}
		}
	}
	return tx.Bucket(boltStored).Put([]byte(localKey(cp.Tenant, cp.ID)), stamp)
}

// Sweep deletes checkpoints stored, and items last referenced, more than
// Retention ago, and returns how many records it deleted. It does nothing
// when Retention is zero. Run it periodically (say hourly) from main; it works
// in transactions of at most 1000 deletions so writers are not held up long.
// Records stored before Retention was set are never swept.
func (s *Bolt) Sweep(ctx context.Context) (int, error) {
	if s.retention <= 0 {
		return 0, nil
	}
	cutoff := uint64(s.now().Add(-s.retention).Unix())
	total := 0
	for _, pair := range [][2][]byte{{boltStored, boltResponses}, {boltTouched, boltItems}, {boltTombstones, boltTombstones}} {
		for {
			if err := ctx.Err(); err != nil {
				return total, fmt.Errorf("sweep: %w", err)
			}
			n, err := s.sweepBatch(pair[0], pair[1], cutoff, 1000)
			total += n
			if err != nil {
				return total, fmt.Errorf("sweep: %w", boltErr(err))
			}
			if n < 1000 {
				break
			}
		}
	}
	return total, nil
}

// sweepBatch deletes up to limit keys of data whose stamp in stamps is older
// than cutoff (and their stamps).
func (s *Bolt) sweepBatch(stamps, data []byte, cutoff uint64, limit int) (int, error) {
	n := 0
	err := s.db.Update(func(tx *bolt.Tx) error {
		sb, db := tx.Bucket(stamps), tx.Bucket(data)
		var old [][]byte
		c := sb.Cursor()
		for k, v := c.First(); k != nil && len(old) < limit; k, v = c.Next() {
			if len(v) == 8 && binary.BigEndian.Uint64(v) < cutoff {
				old = append(old, append([]byte(nil), k...))
			}
		}
		for _, k := range old {
			if err := sb.Delete(k); err != nil {
				return err
			}
			if err := db.Delete(k); err != nil {
				return err
			}
		}
		n = len(old)
		return nil
	})
	return n, err
}

// GetResponse returns the checkpoint stored for tenant and id, or an error
// wrapping ErrNotFound (also for another tenant's id, a malformed id, a
// deleted one (ErrDeleted) and a corrupt record (ErrCorrupt, counted)).
func (s *Bolt) GetResponse(ctx context.Context, tenant, id string) (*Checkpoint, error) {
	op := fmt.Sprintf("get response %q", truncate(id))
	if checkKey(tenant, id) != nil {
		return nil, fmt.Errorf("%s: %w", op, ErrNotFound)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	var rec []byte
	deleted := false
	err := s.db.View(func(tx *bolt.Tx) error {
		k := []byte(localKey(tenant, id))
		if v := tx.Bucket(boltResponses).Get(k); v != nil {
			rec = append([]byte(nil), v...)
		} else {
			deleted = tx.Bucket(boltTombstones).Get(k) != nil
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: %w", op, boltErr(err))
	case deleted:
		return nil, fmt.Errorf("%s: %w", op, ErrDeleted)
	case rec == nil:
		return nil, fmt.Errorf("%s: %w", op, ErrNotFound)
	}
	cp, err := decodeCheckpoint(rec)
	if err == nil && (cp.ID != id || cp.Tenant != tenant) {
		err = fmt.Errorf("record is for %q/%q", truncate(cp.Tenant), truncate(cp.ID))
	}
	if err != nil {
		s.counters.corrupt.Add(1)
		return nil, corrupt(op, err)
	}
	return cp, nil
}

// GetItems returns the items with the given ids, in the order of ids
// (duplicates repeated). A missing id, or one whose stored bytes are not
// valid JSON (counted as corrupt), fails the whole call with an error
// wrapping ErrNotFound that names it.
func (s *Bolt) GetItems(ctx context.Context, tenant string, ids []string) ([]Item, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get items: %w", err)
	}
	if !validTenant(tenant) {
		if len(ids) == 0 {
			return nil, nil
		}
		return nil, fmt.Errorf("get item %q: %w", truncate(ids[0]), ErrNotFound)
	}
	items := make([]Item, len(ids))
	var bad error
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(boltItems)
		for i, id := range ids {
			var v []byte
			if validStoredID(id) {
				v = b.Get([]byte(localKey(tenant, id)))
			}
			if v == nil {
				return fmt.Errorf("get item %q: %w", truncate(id), ErrNotFound)
			}
			if !validItemData(v) {
				bad = corrupt(fmt.Sprintf("get item %q", truncate(id)), errors.New("stored bytes are not valid JSON"))
				return bad
			}
			items[i] = Item{ID: id, Data: append([]byte(nil), v...)}
		}
		return nil
	})
	if bad != nil {
		s.counters.corrupt.Add(1)
	}
	if err != nil {
		return nil, boltErr(err)
	}
	return items, nil
}

// DeleteResponse replaces the checkpoint record for tenant and id with a
// tombstone (see Checkpoints). Deleting an unknown id returns an error
// wrapping ErrNotFound. Items are kept: later checkpoints may reference them.
func (s *Bolt) DeleteResponse(ctx context.Context, tenant, id string) error {
	return s.delete(ctx, tenant, id, false)
}

// delete is DeleteResponse that, with queue, also appends the delete to the
// replay queue in the same transaction (see Fallback).
func (s *Bolt) delete(ctx context.Context, tenant, id string, queue bool) error {
	if checkKey(tenant, id) != nil {
		return fmt.Errorf("delete response %q: %w", truncate(id), ErrNotFound)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete response %q: %w", id, err)
	}
	stamp := binary.BigEndian.AppendUint64(nil, uint64(s.now().Unix()))
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(boltResponses)
		k := []byte(localKey(tenant, id))
		if b.Get(k) == nil {
			if tx.Bucket(boltTombstones).Get(k) != nil {
				return ErrDeleted
			}
			return ErrNotFound
		}
		if err := tombstone(tx, k, stamp); err != nil {
			return err
		}
		if queue {
			return enqueue(tx, opDelete, tenant, id)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete response %q: %w", id, boltErr(err))
	}
	return nil
}

// tombstone deletes the record under k and records its deletion.
func tombstone(tx *bolt.Tx, k, stamp []byte) error {
	if err := tx.Bucket(boltStored).Delete(k); err != nil {
		return err
	}
	if err := tx.Bucket(boltResponses).Delete(k); err != nil {
		return err
	}
	return tx.Bucket(boltTombstones).Put(k, stamp)
}

// CheckpointStats returns the store's counters (Corrupt, Diverted).
func (s *Bolt) CheckpointStats() CheckpointStats { return s.counters.stats() }

// boltErr classifies bolt failures: a closed database is ErrClosed, other
// storage errors are ErrUnavailable; our own sentinels pass through.
func boltErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrInvalid), errors.Is(err, ErrCorrupt):
		return err
	case errors.Is(err, berrors.ErrDatabaseNotOpen):
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}
