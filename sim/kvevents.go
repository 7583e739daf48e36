package sim

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/vmihailenco/msgpack/v5"
)

// KV cache events as vLLM publishes them (vllm/distributed/kv_events.py, enabled with
// --kv-events-config '{"enable_kv_cache_events": true, "publisher": "zmq", ...}'), so that a
// router's KV-block index (llm-d-kv-cache's kvevents.Pool) can track each simulated replica's
// prefix cache exactly as it tracks a vLLM pod's.
//
// On the wire: a ZMQ PUB socket sends three frames per batch, the topic, an 8-byte big-endian
// sequence number (0, 1, 2, … per publisher) and the msgpack KVEventBatch. The batch and its
// events are msgspec structs with array_like=True, omit_defaults=True and, for events, tag=True:
// positional arrays whose first element is the class name, trailing default fields left out.
//
//	KVEventBatch     [ts float64, events [...], data_parallel_rank int]
//	BlockStored      ["BlockStored", block_hashes [u64], parent_block_hash u64|nil, token_ids [int],
//	                  block_size int, lora_id int|nil, medium str|nil, lora_name str|nil,
//	                  extra_keys [[any]|nil]]   (extra_keys only when some block has one)
//	BlockRemoved     ["BlockRemoved", block_hashes [u64], medium str|nil]
//	AllBlocksCleared ["AllBlocksCleared"]
//
// extra_keys are vLLM's per-block extra hash keys (generate_block_hash_extra_keys): the LoRA
// adapter's name on every block of an adapter's request, then cache_salt on the first block.

// KVEvent is one prefix-cache event: a [BlockStored], [BlockRemoved] or [AllBlocksCleared].
type KVEvent interface{ kvEventTag() string }

// BlockStored reports full blocks newly cached, in chain order: block i holds
// TokenIDs[i*BlockSize:(i+1)*BlockSize] and follows block i-1 (the first follows ParentHash, or
// starts a sequence when HasParent is false).
type BlockStored struct {
	BlockHashes []uint64
	ParentHash  uint64
	HasParent   bool
	TokenIDs    []uint32
	BlockSize   int
	// LoRAName is the adapter the blocks were computed with ("" for the base model).
	LoRAName string
	// ExtraKeys holds each block's extra hash keys (nil entries for none); nil when no block has
	// any.
	ExtraKeys [][]string
}

// BlockRemoved reports blocks evicted from the cache.
type BlockRemoved struct{ BlockHashes []uint64 }

// AllBlocksCleared reports that the whole prefix cache was reset.
type AllBlocksCleared struct{}

func (BlockStored) kvEventTag() string      { return "BlockStored" }
func (BlockRemoved) kvEventTag() string     { return "BlockRemoved" }
func (AllBlocksCleared) kvEventTag() string { return "AllBlocksCleared" }

// KVEventSink receives the prefix cache's events, one batch per cache operation, in the order the
// operations happened. Publish is called with the cache's lock held: it must not block (queue or
// drop) and must not call back into the Server. The batch is the sink's to keep.
type KVEventSink interface {
	Publish(events []KVEvent)
}

// mediumGPU is vLLM's MEDIUM_GPU: every simulated block lives in "GPU" memory.
const mediumGPU = "GPU"

// EncodeKVEventBatch encodes events as vLLM's msgpack KVEventBatch (see the package comment of
// this file) with timestamp ts and data-parallel rank 0.
func EncodeKVEventBatch(ts float64, events []KVEvent) ([]byte, error) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	w := func(err error) error { return err }
	err := errors.Join(w(enc.EncodeArrayLen(3)), w(enc.EncodeFloat64(ts)), w(enc.EncodeArrayLen(len(events))))
	for _, ev := range events {
		err = errors.Join(err, encodeKVEvent(enc, ev))
	}
	err = errors.Join(err, enc.EncodeInt(0)) // data_parallel_rank
	if err != nil {
		return nil, fmt.Errorf("encode kv event batch: %w", err)
	}
	return buf.Bytes(), nil
}

func encodeKVEvent(enc *msgpack.Encoder, ev KVEvent) error {
	hashes := func(hs []uint64) error {
		if err := enc.EncodeArrayLen(len(hs)); err != nil {
			return err
		}
		for _, h := range hs {
			// Always the 8-byte form: llm-d's adapter reads a hash only as a 64-bit integer or
			// bytes, not as the fixint msgpack would pick for a small value.
			if err := enc.EncodeUint64(h); err != nil {
				return err
			}
		}
		return nil
	}
	optString := func(s string) error {
		if s == "" {
			return enc.EncodeNil()
		}
		return enc.EncodeString(s)
	}
	switch e := ev.(type) {
	case BlockStored:
		n := 8
		if e.ExtraKeys != nil {
			n = 9
		}
		err := errors.Join(enc.EncodeArrayLen(n), enc.EncodeString(e.kvEventTag()), hashes(e.BlockHashes))
		if e.HasParent {
			err = errors.Join(err, enc.EncodeUint64(e.ParentHash))
		} else {
			err = errors.Join(err, enc.EncodeNil())
		}
		err = errors.Join(err, enc.EncodeArrayLen(len(e.TokenIDs)))
		for _, id := range e.TokenIDs {
			err = errors.Join(err, enc.EncodeUint(uint64(id)))
		}
		// lora_id: vLLM's int id of the adapter, deprecated in favour of lora_name; the simulator
		// numbers no adapters, so it sends none and names the adapter.
		err = errors.Join(err, enc.EncodeInt(int64(e.BlockSize)), enc.EncodeNil(), enc.EncodeString(mediumGPU), optString(e.LoRAName))
		if e.ExtraKeys != nil {
			err = errors.Join(err, enc.EncodeArrayLen(len(e.ExtraKeys)))
			for _, keys := range e.ExtraKeys {
				if keys == nil {
					err = errors.Join(err, enc.EncodeNil())
					continue
				}
				err = errors.Join(err, enc.EncodeArrayLen(len(keys)))
				for _, k := range keys {
					err = errors.Join(err, enc.EncodeString(k))
				}
			}
		}
		return err
	case BlockRemoved:
		return errors.Join(enc.EncodeArrayLen(3), enc.EncodeString(e.kvEventTag()), hashes(e.BlockHashes), enc.EncodeString(mediumGPU))
	case AllBlocksCleared:
		return errors.Join(enc.EncodeArrayLen(1), enc.EncodeString(e.kvEventTag()))
	}
	return fmt.Errorf("unknown kv event %T", ev)
}

// KVEventsTopic is the topic llm-d's subscribers expect from a pod: "kv@<pod>@<model>" (the
// kvevents vLLM adapter reads the pod identifier and the model name from it).
func KVEventsTopic(pod, model string) string { return "kv@" + pod + "@" + model }

// ZMQPublisherOptions configure a [ZMQPublisher].
type ZMQPublisherOptions struct {
	// Endpoint is the PUB socket's address, as vLLM's kv-events "endpoint": one with a wildcard
	// host ("tcp://*:5557") is bound, any other is dialled (vLLM's heuristic). "tcp://*:0" binds a
	// free port ([ZMQPublisher.Addr] tells which). Required.
	Endpoint string
	// Bind binds Endpoint whatever its host (tests and the bench bind tcp://127.0.0.1:0).
	Bind bool
	// Topic is sent as every message's first frame (vLLM's kv-events "topic"); see
	// [KVEventsTopic].
	Topic string
	// QueueBatches bounds the batches waiting to be sent; past it new batches are dropped and
	// counted ([ZMQPublisher.Dropped]), as a subscriber would see a gap in the sequence numbers.
	// Default 100,000 (vLLM's max_queue_size).
	QueueBatches int
	// Logger receives send errors. Default: discard.
	Logger *slog.Logger
	// Now is the batch timestamp's clock. Default time.Now.
	Now func() time.Time
}

// ZMQPublisher sends KV event batches on a ZMQ PUB socket from its own goroutine; it implements
// [KVEventSink]. Close it to stop the goroutine and the socket.
type ZMQPublisher struct {
	opts  ZMQPublisherOptions
	sock  zmq4.Socket
	queue chan []KVEvent
	done  chan struct{}

	closeOnce sync.Once
	mu        sync.Mutex // guards closed against Publish
	closed    bool
	sent      atomic.Uint64
	dropped   atomic.Uint64
}

var _ KVEventSink = (*ZMQPublisher)(nil)

// NewZMQPublisher opens the PUB socket (binding or dialling opts.Endpoint) and starts sending.
func NewZMQPublisher(ctx context.Context, opts ZMQPublisherOptions) (*ZMQPublisher, error) {
	if opts.Endpoint == "" {
		return nil, fmt.Errorf("kv events publisher: no endpoint")
	}
	if opts.QueueBatches <= 0 {
		opts.QueueBatches = 100_000
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	// The socket lives until Close, not until ctx ends: ctx only scopes the set-up.
	sock := zmq4.NewPub(context.WithoutCancel(ctx))
	var err error
	if opts.Bind || bindEndpoint(opts.Endpoint) {
		err = sock.Listen(opts.Endpoint)
	} else {
		err = sock.Dial(opts.Endpoint)
	}
	if err != nil {
		sock.Close()
		return nil, fmt.Errorf("kv events publisher %s: %w", opts.Endpoint, err)
	}
	p := &ZMQPublisher{opts: opts, sock: sock, queue: make(chan []KVEvent, opts.QueueBatches), done: make(chan struct{})}
	go p.run()
	return p, nil
}

// bindEndpoint reports whether vLLM's ZmqEventPublisher would bind endpoint rather than connect
// to it: a wildcard host, an IPv6 any address, ipc:// or inproc://.
func bindEndpoint(ep string) bool {
	return strings.Contains(ep, "*") || strings.Contains(ep, "::") || strings.HasPrefix(ep, "ipc://") || strings.HasPrefix(ep, "inproc://")
}

// Addr is the bound socket's address (host:port), or "" when the publisher dialled out.
func (p *ZMQPublisher) Addr() string {
	if a := p.sock.Addr(); a != nil {
		return a.String()
	}
	return ""
}

// Publish queues a batch; it never blocks (a full queue drops the batch).
func (p *ZMQPublisher) Publish(events []KVEvent) {
	if len(events) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	select {
	case p.queue <- events:
	default:
		p.dropped.Add(1)
	}
}

// Sent is the number of batches sent so far (also the next sequence number); Dropped the number
// dropped on a full queue.
func (p *ZMQPublisher) Sent() uint64    { return p.sent.Load() }
func (p *ZMQPublisher) Dropped() uint64 { return p.dropped.Load() }

func (p *ZMQPublisher) run() {
	defer close(p.done)
	topic := []byte(p.opts.Topic)
	var seq uint64
	for events := range p.queue {
		ts := float64(p.opts.Now().UnixNano()) / 1e9
		payload, err := EncodeKVEventBatch(ts, events)
		if err != nil {
			p.opts.Logger.Error("kv events: encode", "err", err)
			continue
		}
		var seqBytes [8]byte
		binary.BigEndian.PutUint64(seqBytes[:], seq)
		if err := p.sock.SendMulti(zmq4.NewMsgFrom(topic, seqBytes[:], payload)); err != nil {
			p.opts.Logger.Warn("kv events: send", "seq", seq, "err", err)
		}
		seq++
		p.sent.Store(seq)
		if seq == math.MaxUint64 {
			seq = 0
		}
	}
}

// Close sends what is queued, then closes the socket. Safe to call more than once.
func (p *ZMQPublisher) Close() error {
	var err error
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		close(p.queue)
		p.mu.Unlock()
		<-p.done
		err = p.sock.Close()
	})
	return err
}
