package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Run statuses. queued and in_progress are unfinished; the others are final.
const (
	RunQueued     = "queued"
	RunInProgress = "in_progress"
	RunCompleted  = "completed"
	RunIncomplete = "incomplete"
	RunFailed     = "failed"
	RunCancelled  = "cancelled"
)

// RunFinished reports whether status is final.
func RunFinished(status string) bool { return status != RunQueued && status != RunInProgress }

// NextSeq is the sequence number of the next event an unfinished run generates: every event
// generated so far was logged or counted in Dropped (the EventsOmitted marker borrows the
// number of the first event it stands for).
func (run *Run) NextSeq() int {
	n := run.Events + run.Dropped
	if run.Marker > 0 {
		n--
	}
	return n
}

// LogIndex returns the log index of the first event numbered after sequence number after (-1:
// from the start), and whether that is known yet: past the EventsOmitted marker, only once the
// run has finished (the final events' numbers depend on how many were dropped), and past the
// log's end, only once the run has finished or the event is the next one.
func (run *Run) LogIndex(after int) (int, bool) {
	s := after + 1
	switch {
	case run.Marker > 0 && s <= run.Marker:
		return s, true // before the gap, and the marker itself, are numbered by index
	case run.Marker > 0:
		return max(run.Marker+1, s-run.Dropped+1), RunFinished(run.Status)
	}
	return s, s <= run.Events || RunFinished(run.Status)
}

// ErrRunFinished reports a write to a run that has already ended (cancelled, or finished by its
// owner): the writer stops; nothing was written.
var ErrRunFinished = errors.New("store: run already finished")

// ErrLeaseExpired reports a Settle after the owner's lease ended: readers already see the run
// failed, so its owner must not store it as finished; nothing was written.
var ErrLeaseExpired = errors.New("store: run lease expired")

// EventsOmitted is the type of the event logged where a run's log filled (RunsOptions.MaxEvents):
// the events generated after it, up to the run's final events, are not logged. It carries the
// sequence number of the first event not logged. It is stitch's, not OpenAI's; the "response."
// prefix makes the SDKs hand it over like the other events (the Node and Python SDKs wrap
// events of other prefixes differently).
const EventsOmitted = "response.events_omitted"

// Run is the state of a background response: who generates it, until when its owner's lease
// holds, its status and latest Response object, and how many events its log holds.
type Run struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant"`
	// Owner names the process generating the response.
	Owner string `json:"owner"`
	// Status is a Run* constant.
	Status string `json:"status"`
	// LeaseUntil is when the owner's lease ends. An unfinished run past it reads as failed
	// (Expired): its owner died or lost the store.
	LeaseUntil time.Time `json:"lease_until"`
	// Response is the latest Response object (the one created at the start, then the final one).
	Response json.RawMessage `json:"response"`
	// Events is the number of events logged (their sequence numbers are 0..Events-1).
	Events int `json:"events"`
	// Dropped counts events not logged because the log was full (RunsOptions.MaxEvents).
	Dropped int `json:"dropped,omitempty"`
	// Marker is the log index of the EventsOmitted event logged when the log filled (0: it has
	// not filled). The events before it are numbered by their index; the events logged after it
	// (the final ones) carry sequence numbers Dropped-1 higher than their index.
	Marker int `json:"marker,omitempty"`
	// Settling is set by the owner when it starts storing the finished response (Settle): from
	// then on a cancel no longer wins the race; the run ends as the owner finishes it.
	Settling bool `json:"settling,omitempty"`
	// Expired is set on reads of an unfinished run whose lease ended (Status then reads failed).
	Expired bool `json:"-"`
}

// RunsOptions configures Runs. The zero value is ready to use.
type RunsOptions struct {
	// TTL is how long a run and its events are kept after their last write. Zero means 24 hours.
	TTL time.Duration
	// Lease is how long an owner's lease lasts after each write (owners renew it well before).
	// Zero means 30 seconds.
	Lease time.Duration
	// MaxEvents bounds the events logged per run; later ones are counted in Dropped, except the
	// final events (Finish), which are always logged. Zero means 100000.
	MaxEvents int
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
}

// Runs stores background responses: one record per run (owner, lease, status, response) and an
// append-only log of its stream events (encoded server-sent events, sequence number = index),
// bounded (MaxEvents) and expiring (TTL), in a RecordBackend shared by every pod that shares the
// backend (Redis). Writers are the owner (Create, Append, Finish) and anyone cancelling
// (Cancel); readers (Get, Events, Wait) may be on any pod. Safe for concurrent use.
type Runs struct {
	b    RecordBackend
	opts RunsOptions

	mu      sync.Mutex
	waiters map[string]*runWaiters // by run key, while someone waits
}

// runWaiters is closed at the next local write of a run; n counts the Waits sharing it.
type runWaiters struct {
	ch chan struct{}
	n  int
}

// NewRuns returns Runs over b.
func NewRuns(b RecordBackend, opts RunsOptions) *Runs {
	if opts.TTL <= 0 {
		opts.TTL = 24 * time.Hour
	}
	if opts.Lease <= 0 {
		opts.Lease = 30 * time.Second
	}
	if opts.MaxEvents <= 0 {
		opts.MaxEvents = 100_000
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Runs{b: b, opts: opts, waiters: map[string]*runWaiters{}}
}

// Lease is the lease duration owners get.
func (r *Runs) Lease() time.Duration { return r.opts.Lease }

func (r *Runs) keys(tenant, id string) (rec, log string) {
	return r.b.key(tenant, "run", id), r.b.key(tenant, "runlog", id)
}

func checkRunKey(tenant, id string) error {
	if !validTenant(tenant) || !keyPart(id) {
		return fmt.Errorf("run %q: %w", truncate(id), ErrInvalidKey)
	}
	return nil
}

func decodeRun(b []byte) (*Run, error) {
	var run Run
	if err := json.Unmarshal(b, &run); err != nil {
		return nil, corrupt("decode run", err)
	}
	return &run, nil
}

// Create stores a new run with its first events and the owner's lease (from now). An id that
// exists already fails with ErrInvalidKey.
func (r *Runs) Create(ctx context.Context, run *Run, events [][]byte) error {
	if err := checkRunKey(run.Tenant, run.ID); err != nil {
		return err
	}
	rk, lk := r.keys(run.Tenant, run.ID)
	err := r.b.update(ctx, rk, func(cur []byte) (*recordWrites, error) {
		if cur != nil {
			return nil, fmt.Errorf("create run %q: exists: %w", truncate(run.ID), ErrInvalidKey)
		}
		c := *run
		c.LeaseUntil = r.opts.Now().Add(r.opts.Lease)
		c.Events, c.Dropped, c.Marker = 0, 0, 0
		keep := r.capped(&c, events)
		b, err := json.Marshal(&c)
		if err != nil {
			return nil, err
		}
		return &recordWrites{ttl: r.opts.TTL, puts: []recordPut{{rk, b}}, dels: []string{lk}, logKey: lk, log: keep}, nil
	})
	if err == nil {
		r.notify(rk)
	}
	return err
}

// capped returns the events of a non-final write that fit in run's log and counts them in run:
// where the log fills (MaxEvents), an EventsOmitted marker is logged once, and later events are
// only counted in Dropped.
func (r *Runs) capped(run *Run, events [][]byte) [][]byte {
	if len(events) == 0 {
		return nil
	}
	if run.Marker > 0 {
		run.Dropped += len(events)
		return nil
	}
	room := max(0, r.opts.MaxEvents-run.Events)
	if room >= len(events) {
		run.Events += len(events)
		return events
	}
	keep := append(events[:room:room], omittedEvent(eventSeq(events[room], run.Events+run.Dropped)))
	run.Marker = run.Events + room
	run.Dropped += len(events) - room
	run.Events += len(keep)
	return keep
}

// omittedEvent is the EventsOmitted marker for the events from sequence number seq on.
func omittedEvent(seq int) []byte {
	b := fmt.Appendf(nil, "event: %s\ndata: {\"type\":%q,\"sequence_number\":%d,\"first_omitted\":%d,", EventsOmitted, EventsOmitted, seq, seq)
	return append(b, `"message":"The event log of this response is full: the events from this sequence number until the response's final events are not logged. Retrieve the response for its whole output."}`+"\n\n"...)
}

// eventSeq reads the sequence_number of an encoded event (def when it has none).
func eventSeq(ev []byte, def int) int {
	_, data, ok := bytes.Cut(ev, []byte("data: "))
	if !ok {
		return def
	}
	var head struct {
		Seq *int `json:"sequence_number"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if dec.Decode(&head) != nil || head.Seq == nil {
		return def
	}
	return *head.Seq
}

// Append logs events (those beyond MaxEvents only counted, see EventsOmitted) and renews the
// owner's lease; with no events it only renews. It returns the run as stored after the write. A
// finished run (cancelled meanwhile) is not written: the run is returned with ErrRunFinished. A
// run gone (deleted or expired) is ErrNotFound.
func (r *Runs) Append(ctx context.Context, tenant, id string, events [][]byte) (*Run, error) {
	return r.write(ctx, tenant, id, "", nil, events, false)
}

// Settle is the owner's last Append before it stores the finished response: it logs events and
// marks the run Settling, after which Cancel no longer cancels it. It is the point where a race
// between the generation's end and a cancel is decided, atomically in the store every pod
// shares: a run cancelled first is ErrRunFinished (the owner stores nothing), one whose lease
// ended is ErrLeaseExpired (readers see it failed), one deleted is ErrNotFound. Calling it again
// after a success (a reply lost to a store error) writes nothing and succeeds.
func (r *Runs) Settle(ctx context.Context, tenant, id string, events [][]byte) (*Run, error) {
	return r.write(ctx, tenant, id, "", nil, events, true)
}

// Finish ends the run with status and its final Response and events (always logged). A run
// already finished is not written (ErrRunFinished), except a cancelled run finished as
// cancelled, whose Response (the output generated until the cancel) replaces the one Cancel
// stored.
func (r *Runs) Finish(ctx context.Context, tenant, id, status string, response []byte, events [][]byte) (*Run, error) {
	if !RunFinished(status) {
		return nil, fmt.Errorf("finish run %q with status %q: %w", truncate(id), status, ErrInvalidKey)
	}
	return r.write(ctx, tenant, id, status, response, events, false)
}

func (r *Runs) write(ctx context.Context, tenant, id, status string, response []byte, events [][]byte, settle bool) (*Run, error) {
	if err := checkRunKey(tenant, id); err != nil {
		return nil, err
	}
	rk, lk := r.keys(tenant, id)
	var out *Run
	var finished, expired bool
	err := r.b.update(ctx, rk, func(cur []byte) (*recordWrites, error) {
		finished, expired = false, false
		if cur == nil {
			return nil, fmt.Errorf("run %q: %w", truncate(id), ErrNotFound)
		}
		run, err := decodeRun(cur)
		if err != nil {
			return nil, err
		}
		out = run
		if RunFinished(run.Status) {
			if !(run.Status == RunCancelled && status == RunCancelled) {
				finished = true
				return nil, nil
			}
			events = nil // a cancelled run's stream ended at the cancel
		}
		if settle {
			switch {
			case run.Settling:
				return nil, nil // this owner's earlier Settle was stored; its reply was lost
			case !r.opts.Now().Before(run.LeaseUntil):
				expired = true
				return nil, nil
			}
			run.Settling = true
		}
		start := run.Events
		keep := events
		if status == "" {
			keep = r.capped(run, events)
		} else {
			run.Status, run.Response = status, response
			run.Events += len(keep)
		}
		run.LeaseUntil = r.opts.Now().Add(r.opts.Lease)
		b, err := json.Marshal(run)
		if err != nil {
			return nil, err
		}
		return &recordWrites{ttl: r.opts.TTL, puts: []recordPut{{rk, b}}, touch: []string{lk}, logKey: lk, logStart: start, log: keep}, nil
	})
	if err != nil {
		return nil, err
	}
	switch {
	case finished:
		return out, fmt.Errorf("run %q: %w", truncate(id), ErrRunFinished)
	case expired:
		return out, fmt.Errorf("run %q: %w", truncate(id), ErrLeaseExpired)
	}
	r.notify(rk)
	return out, nil
}

// Get returns the run. An unfinished run whose owner's lease ended reads with Status failed and
// Expired set.
func (r *Runs) Get(ctx context.Context, tenant, id string) (*Run, error) {
	if checkRunKey(tenant, id) != nil {
		return nil, fmt.Errorf("get run %q: %w", truncate(id), ErrNotFound)
	}
	rk, _ := r.keys(tenant, id)
	b, err := r.b.get(ctx, rk)
	if err != nil {
		return nil, fmt.Errorf("get run %q: %w", truncate(id), err)
	}
	run, err := decodeRun(b)
	if err != nil {
		return nil, err
	}
	if run.Tenant != tenant || run.ID != id {
		return nil, corrupt("get run", fmt.Errorf("record of %q names another run", truncate(id)))
	}
	if !RunFinished(run.Status) && !r.opts.Now().Before(run.LeaseUntil) {
		run.Status, run.Expired = RunFailed, true
	}
	return run, nil
}

// Events returns up to max logged events from sequence number from (encoded server-sent events).
func (r *Runs) Events(ctx context.Context, tenant, id string, from, max int) ([][]byte, error) {
	if checkRunKey(tenant, id) != nil {
		return nil, fmt.Errorf("run events %q: %w", truncate(id), ErrNotFound)
	}
	_, lk := r.keys(tenant, id)
	evs, err := r.b.logRange(ctx, lk, from, max)
	if err != nil {
		return nil, fmt.Errorf("run events %q: %w", truncate(id), err)
	}
	return evs, nil
}

// Cancel ends an unfinished run as cancelled (its Response's status set by cancelled), logging
// the event ended returns (numbered seq; nil: none) as its stream's last; the owner sees it at
// its next write and stops. It returns the run as stored and whether this call cancelled it
// (false: it had finished already, or its owner is settling it: the run is then returned
// unfinished and ends as its owner finishes it). A run whose owner's lease ended is finished
// (failed), not cancelled. The decision is one atomic update of the record every pod shares,
// so it is the same on every pod.
func (r *Runs) Cancel(ctx context.Context, tenant, id string, cancelled func(response []byte) []byte, ended func(seq int) []byte) (*Run, bool, error) {
	if checkRunKey(tenant, id) != nil {
		return nil, false, fmt.Errorf("cancel run %q: %w", truncate(id), ErrNotFound)
	}
	rk, lk := r.keys(tenant, id)
	var out *Run
	changed := false
	err := r.b.update(ctx, rk, func(cur []byte) (*recordWrites, error) {
		changed = false
		if cur == nil {
			return nil, fmt.Errorf("cancel run %q: %w", truncate(id), ErrNotFound)
		}
		run, err := decodeRun(cur)
		if err != nil {
			return nil, err
		}
		out = run
		if RunFinished(run.Status) || run.Settling || !r.opts.Now().Before(run.LeaseUntil) {
			return nil, nil
		}
		var log [][]byte
		if ended != nil {
			log = [][]byte{ended(run.NextSeq())}
		}
		start := run.Events
		run.Status, run.Response = RunCancelled, cancelled(run.Response)
		run.Events += len(log)
		b, err := json.Marshal(run)
		if err != nil {
			return nil, err
		}
		changed = true
		return &recordWrites{ttl: r.opts.TTL, puts: []recordPut{{rk, b}}, touch: []string{lk}, logKey: lk, logStart: start, log: log}, nil
	})
	if err != nil {
		return nil, false, err
	}
	if changed {
		r.notify(rk)
		return out, true, nil
	}
	got, err := r.Get(ctx, tenant, id) // with the lease applied
	return got, false, err
}

// Delete removes the run and its events (an unfinished one's owner then stops: its next write
// finds ErrNotFound). Deleting an unknown run is ErrNotFound.
func (r *Runs) Delete(ctx context.Context, tenant, id string) error {
	if checkRunKey(tenant, id) != nil {
		return fmt.Errorf("delete run %q: %w", truncate(id), ErrNotFound)
	}
	rk, lk := r.keys(tenant, id)
	err := r.b.update(ctx, rk, func(cur []byte) (*recordWrites, error) {
		if cur == nil {
			return nil, fmt.Errorf("delete run %q: %w", truncate(id), ErrNotFound)
		}
		return &recordWrites{ttl: r.opts.TTL, dels: []string{rk, lk}}, nil
	})
	if err == nil {
		r.notify(rk)
	}
	return err
}

// Wait returns when this process next writes the run, after d, or when ctx ends, whichever
// comes first. Writes by other processes are seen by reading again after d (polling).
func (r *Runs) Wait(ctx context.Context, tenant, id string, d time.Duration) {
	rk, _ := r.keys(tenant, id)
	r.mu.Lock()
	w := r.waiters[rk]
	if w == nil {
		w = &runWaiters{ch: make(chan struct{})}
		r.waiters[rk] = w
	}
	w.n++
	r.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.ch:
	case <-t.C:
	case <-ctx.Done():
	}
	r.mu.Lock()
	if w.n--; w.n == 0 && r.waiters[rk] == w {
		delete(r.waiters, rk) // nobody waits: no entry outlives its waiters
	}
	r.mu.Unlock()
}

func (r *Runs) notify(rk string) {
	r.mu.Lock()
	w := r.waiters[rk]
	delete(r.waiters, rk)
	r.mu.Unlock()
	if w != nil {
		close(w.ch)
	}
}
