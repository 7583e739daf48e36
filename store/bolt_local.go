package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// The Fallback's state in the pod's Bolt file: the replay queue (writes and
// deletes the shared store has not seen yet) and the cursors that survive a
// restart. Keeping them in the same file as the local copies makes "stored
// locally, owed to Redis" one transaction: a kill -9 cannot leave a response
// on disk that the queue forgot.

// replayOp is one queued operation.
type replayOp struct {
	seq        uint64
	delete     bool
	tenant, id string
}

const (
	opPut    = 'p'
	opDelete = 'd'
)

// Meta keys.
var (
	metaDeletionsCursor = []byte("deletions_cursor") // last deletion-stream entry applied
	metaEpoch           = []byte("epoch")            // shared-store epoch fully re-published
)

// enqueue appends op for tenant/id to the replay queue: value is the op byte,
// tenant, NUL, id (tenants contain no NUL).
func enqueue(tx *bolt.Tx, op byte, tenant, id string) error {
	b := tx.Bucket(boltReplay)
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	v := make([]byte, 0, 2+len(tenant)+len(id))
	v = append(append(append(append(v, op), tenant...), 0), id...)
	return b.Put(binary.BigEndian.AppendUint64(nil, seq), v)
}

// queued returns up to limit queued operations, oldest first.
func (s *Bolt) queued(ctx context.Context, limit int) ([]replayOp, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var ops []replayOp
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(boltReplay).Cursor()
		for k, v := c.First(); k != nil && len(ops) < limit; k, v = c.Next() {
			tenant, id, ok := strings.Cut(string(v[min(1, len(v)):]), "\x00")
			if len(k) != 8 || len(v) < 1 || !ok {
				continue // not ours; dequeue drops it with the page
			}
			ops = append(ops, replayOp{seq: binary.BigEndian.Uint64(k), delete: v[0] == opDelete, tenant: tenant, id: id})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read replay queue: %w", boltErr(err))
	}
	return ops, nil
}

// dequeue removes the queue entries up to and including seq.
func (s *Bolt) dequeue(seq uint64) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		c := tx.Bucket(boltReplay).Cursor()
		for k, _ := c.First(); k != nil && binary.BigEndian.Uint64(k) <= seq; k, _ = c.First() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("dequeue replayed: %w", boltErr(err))
	}
	return nil
}

// queueLen counts the queued operations.
func (s *Bolt) queueLen() (int, error) {
	n := 0
	err := s.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(boltReplay).Stats().KeyN
		return nil
	})
	return n, boltErr(err)
}

// applyDeletions tombstones the responses deleted elsewhere that this store
// holds, and records cursor, in one transaction. Ids it does not hold are
// skipped: a tombstone matters only where a copy could be served.
func (s *Bolt) applyDeletions(ctx context.Context, dels []deletion, cursor string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	stamp := binary.BigEndian.AppendUint64(nil, uint64(s.now().Unix()))
	err := s.db.Update(func(tx *bolt.Tx) error {
		for _, d := range dels {
			k := []byte(localKey(d.tenant, d.id))
			if tx.Bucket(boltResponses).Get(k) == nil {
				continue
			}
			if err := tombstone(tx, k, stamp); err != nil {
				return err
			}
		}
		if cursor == "" {
			return nil
		}
		return tx.Bucket(boltMeta).Put(metaDeletionsCursor, []byte(cursor))
	})
	if err != nil {
		return fmt.Errorf("apply deletions: %w", boltErr(err))
	}
	return nil
}

// markDeleted records a tombstone for tenant/id whether or not this store
// holds it, so a re-publication after Redis lost its data re-posts it.
func (s *Bolt) markDeleted(ctx context.Context, tenant, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	stamp := binary.BigEndian.AppendUint64(nil, uint64(s.now().Unix()))
	err := s.db.Update(func(tx *bolt.Tx) error { return tombstone(tx, []byte(localKey(tenant, id)), stamp) })
	if err != nil {
		return fmt.Errorf("mark %q deleted: %w", truncate(id), boltErr(err))
	}
	return nil
}

// meta reads a Fallback cursor ("" when unset).
func (s *Bolt) meta(key []byte) (string, error) {
	var v string
	err := s.db.View(func(tx *bolt.Tx) error {
		v = string(tx.Bucket(boltMeta).Get(key))
		return nil
	})
	return v, boltErr(err)
}

// setMeta writes a Fallback cursor.
func (s *Bolt) setMeta(key []byte, v string) error {
	return boltErr(s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(boltMeta).Put(key, []byte(v)) }))
}

// localRef is a (tenant, id) found by scan.
type localRef struct {
	tenant, id string
	deleted    bool
}

// scan returns up to limit records after key after (nil: from the start):
// responses, then tombstones once responses are exhausted. next is the
// cursor for the following page; done reports the end.
func (s *Bolt) scan(after []byte, tombstones bool, limit int) (refs []localRef, next []byte, err error) {
	bucket := boltResponses
	if tombstones {
		bucket = boltTombstones
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucket).Cursor()
		k, _ := c.First()
		if after != nil {
			k, _ = c.Seek(after)
			if k != nil && bytes.Equal(k, after) {
				k, _ = c.Next()
			}
		}
		for ; k != nil && len(refs) < limit; k, _ = c.Next() {
			tenant, id, ok := strings.Cut(string(k), "\x00")
			if ok {
				refs = append(refs, localRef{tenant: tenant, id: id, deleted: tombstones})
			}
			next = append(next[:0], k...)
		}
		return nil
	})
	return refs, next, boltErr(err)
}
