package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// RecordBackend is where [Runs] and [Conversations] keep their records: byte values by key with
// a time to live, append-only logs, and an atomic read-modify-write of one key together with
// other writes. [MemoryRecords], [BoltRecords] and [RedisRecords] implement it; every key
// includes the tenant (Redis: as the cluster hash tag, so one transaction's keys share a slot).
type RecordBackend interface {
	key(tenant, kind, id string) string
	get(ctx context.Context, key string) ([]byte, error) // ErrNotFound when absent or expired
	mget(ctx context.Context, keys []string) ([][]byte, error)
	// update reads key (nil when absent), calls fn with it and applies the writes fn returns,
	// atomically: when key changes meanwhile fn is called again with the new value. An error
	// from fn aborts (nothing is written) and is returned.
	update(ctx context.Context, key string, fn func(cur []byte) (*recordWrites, error)) error
	// logRange returns up to max entries of the log at key, from index from.
	logRange(ctx context.Context, key string, from, max int) ([][]byte, error)
}

// recordWrites are the writes of one update, applied in one transaction, all with ttl unless a
// put or the touches name their own.
type recordWrites struct {
	ttl   time.Duration
	puts  []recordPut
	dels  []string // keys (and logs) deleted
	touch []string // keys whose ttl is refreshed, to touchTTL (0: ttl)
	// touchPuts are written with touchTTL (0: ttl), like the touched keys they join. touchTTL
	// lets an update give keys a longer ttl than its record's: conversation items outlive their
	// record by a slack, so a change need not touch every item (store/conversations.go).
	touchPuts []recordPut
	touchTTL  time.Duration
	// log entries appended to logKey, the first at index logStart (the caller tracks the log's
	// length in its record, written in the same update).
	logKey   string
	logStart int
	log      [][]byte
}

type recordPut struct {
	key string
	val []byte
}

// touchTTLOrDefault is the ttl w's touches refresh to.
func (w *recordWrites) touchTTLOrDefault() time.Duration {
	if w.touchTTL > 0 {
		return w.touchTTL
	}
	return w.ttl
}

// maxUpdateRetries bounds the optimistic retries of an update under contention.
const maxUpdateRetries = 64

var errUpdateContended = errors.New("store: record update contended")

// --- memory ---

type memRecord struct {
	val []byte
	exp time.Time
}

type memLog struct {
	entries [][]byte
	exp     time.Time
}

// memoryRecords is the in-process RecordBackend.
type memoryRecords struct {
	mu   sync.Mutex
	now  func() time.Time
	recs map[string]memRecord
	logs map[string]*memLog
}

// MemoryRecords returns an in-process RecordBackend (tests, single process without a data
// directory). now is its clock (nil: time.Now).
func MemoryRecords(now func() time.Time) RecordBackend {
	if now == nil {
		now = time.Now
	}
	return &memoryRecords{now: now, recs: map[string]memRecord{}, logs: map[string]*memLog{}}
}

func (m *memoryRecords) key(tenant, kind, id string) string {
	return tenant + "\x00" + kind + "\x00" + id
}

func (m *memoryRecords) getLocked(key string) ([]byte, bool) {
	r, ok := m.recs[key]
	if !ok || !m.now().Before(r.exp) {
		return nil, false
	}
	return r.val, true
}

func (m *memoryRecords) get(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.getLocked(key)
	if !ok {
		return nil, ErrNotFound
	}
	return bytes.Clone(v), nil
}

func (m *memoryRecords) mget(ctx context.Context, keys []string) ([][]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([][]byte, len(keys))
	for i, k := range keys {
		if v, ok := m.getLocked(k); ok {
			out[i] = bytes.Clone(v)
		}
	}
	return out, nil
}

func (m *memoryRecords) update(ctx context.Context, key string, fn func(cur []byte) (*recordWrites, error)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, _ := m.getLocked(key)
	w, err := fn(bytes.Clone(cur))
	if err != nil || w == nil {
		return err
	}
	exp := m.now().Add(w.ttl)
	for _, k := range w.dels {
		delete(m.recs, k)
		delete(m.logs, k)
	}
	for _, p := range w.puts {
		m.recs[p.key] = memRecord{val: bytes.Clone(p.val), exp: exp}
	}
	touchExp := m.now().Add(w.touchTTLOrDefault())
	for _, p := range w.touchPuts {
		m.recs[p.key] = memRecord{val: bytes.Clone(p.val), exp: touchExp}
	}
	for _, k := range w.touch {
		if r, ok := m.recs[k]; ok {
			r.exp = touchExp
			m.recs[k] = r
		}
	}
	if w.logKey != "" {
		l := m.logs[w.logKey]
		if l == nil || !m.now().Before(l.exp) {
			l = &memLog{}
			m.logs[w.logKey] = l
		}
		for _, e := range w.log {
			l.entries = append(l.entries, bytes.Clone(e))
		}
		l.exp = exp
	}
	return nil
}

func (m *memoryRecords) logRange(ctx context.Context, key string, from, max int) ([][]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.logs[key]
	if l == nil || !m.now().Before(l.exp) || from >= len(l.entries) || from < 0 {
		return nil, nil
	}
	end := min(len(l.entries), from+max)
	out := make([][]byte, 0, end-from)
	for _, e := range l.entries[from:end] {
		out = append(out, bytes.Clone(e))
	}
	return out, nil
}

// --- bolt ---

// boltRecordsBucket holds the records of Runs and Conversations in the checkpoint store's file:
// key → 8 bytes of expiry (unix nanoseconds, big-endian) then the value. A log entry's key is
// its log's key, "\x00", and its index as 8 big-endian bytes.
var boltRecordsBucket = []byte("records")

type boltRecords struct {
	db  *bolt.DB
	now func() time.Time
}

// BoltRecords returns a RecordBackend in b's file (bucket "records"), for a single process.
// Writes are fsync'd (concurrent ones share a transaction). Expired records read as absent;
// Sweep removes them.
func BoltRecords(b *Bolt) (RecordBackend, error) {
	err := b.db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(boltRecordsBucket)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open records bucket: %w", boltErr(err))
	}
	return &boltRecords{db: b.db, now: b.now}, nil
}

func (b *boltRecords) key(tenant, kind, id string) string {
	return tenant + "\x00" + kind + "\x00" + id
}

func (b *boltRecords) live(v []byte) ([]byte, bool) {
	if len(v) < 8 {
		return nil, false
	}
	if exp := int64(binary.BigEndian.Uint64(v[:8])); b.now().UnixNano() >= exp {
		return nil, false
	}
	return v[8:], true
}

func (b *boltRecords) stamp(val []byte, exp time.Time) []byte {
	out := make([]byte, 8, 8+len(val))
	binary.BigEndian.PutUint64(out, uint64(exp.UnixNano()))
	return append(out, val...)
}

func (b *boltRecords) get(ctx context.Context, key string) ([]byte, error) {
	vs, err := b.mget(ctx, []string{key})
	if err != nil {
		return nil, err
	}
	if vs[0] == nil {
		return nil, ErrNotFound
	}
	return vs[0], nil
}

func (b *boltRecords) mget(ctx context.Context, keys []string) ([][]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([][]byte, len(keys))
	err := b.db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket(boltRecordsBucket)
		for i, k := range keys {
			if v, ok := b.live(bk.Get([]byte(k))); ok {
				out[i] = bytes.Clone(v)
			}
		}
		return nil
	})
	if err != nil {
		return nil, boltErr(err)
	}
	return out, nil
}

func logEntryKey(logKey string, i int) []byte {
	k := make([]byte, 0, len(logKey)+9)
	k = append(k, logKey...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, uint64(i))
}

func (b *boltRecords) update(ctx context.Context, key string, fn func(cur []byte) (*recordWrites, error)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var fnErr error
	err := b.db.Batch(func(tx *bolt.Tx) error {
		fnErr = nil
		bk := tx.Bucket(boltRecordsBucket)
		cur, _ := b.live(bk.Get([]byte(key)))
		w, err := fn(bytes.Clone(cur))
		if err != nil {
			fnErr = err
			return nil // nothing written; not a batch failure
		}
		if w == nil {
			return nil
		}
		exp := b.now().Add(w.ttl)
		for _, k := range w.dels {
			if err := bk.Delete([]byte(k)); err != nil {
				return err
			}
			if err := deleteLog(bk, k); err != nil {
				return err
			}
		}
		for _, p := range w.puts {
			if err := bk.Put([]byte(p.key), b.stamp(p.val, exp)); err != nil {
				return err
			}
		}
		touchExp := b.now().Add(w.touchTTLOrDefault())
		for _, p := range w.touchPuts {
			if err := bk.Put([]byte(p.key), b.stamp(p.val, touchExp)); err != nil {
				return err
			}
		}
		for _, k := range w.touch {
			if v, ok := b.live(bk.Get([]byte(k))); ok {
				if err := bk.Put([]byte(k), b.stamp(bytes.Clone(v), touchExp)); err != nil {
					return err
				}
			}
		}
		for i, e := range w.log {
			if err := bk.Put(logEntryKey(w.logKey, w.logStart+i), b.stamp(e, exp)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("update record: %w", boltErr(err))
	}
	return fnErr
}

func deleteLog(bk *bolt.Bucket, logKey string) error {
	prefix := append([]byte(logKey), 0)
	c := bk.Cursor()
	var keys [][]byte
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(k) == len(prefix)+8 {
			keys = append(keys, bytes.Clone(k))
		}
	}
	for _, k := range keys {
		if err := bk.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

func (b *boltRecords) logRange(ctx context.Context, key string, from, max int) ([][]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if from < 0 || max <= 0 {
		return nil, nil
	}
	var out [][]byte
	prefix := append([]byte(key), 0)
	err := b.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(boltRecordsBucket).Cursor()
		for k, v := c.Seek(logEntryKey(key, from)); k != nil && bytes.HasPrefix(k, prefix) && len(out) < max; k, v = c.Next() {
			if len(k) != len(prefix)+8 {
				continue
			}
			e, ok := b.live(v)
			if !ok {
				break
			}
			out = append(out, bytes.Clone(e))
		}
		return nil
	})
	if err != nil {
		return nil, boltErr(err)
	}
	return out, nil
}

// SweepRecords deletes the expired records and log entries of BoltRecords in b's file and
// returns how many it removed.
func SweepRecords(ctx context.Context, b *Bolt) (int, error) {
	now := uint64(b.now().UnixNano())
	n := 0
	err := b.db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(boltRecordsBucket)
		if bk == nil {
			return nil
		}
		var dead [][]byte
		c := bk.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			if len(v) < 8 || binary.BigEndian.Uint64(v[:8]) <= now {
				dead = append(dead, bytes.Clone(k))
			}
		}
		for _, k := range dead {
			if err := bk.Delete(k); err != nil {
				return err
			}
		}
		n = len(dead)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sweep records: %w", boltErr(err))
	}
	return n, nil
}

// keyPart rejects the bytes the record key layouts reserve in a part of a key.
func keyPart(s string) bool {
	return s != "" && len(s) <= MaxIDLen && !strings.ContainsAny(s, "\x00{}")
}
