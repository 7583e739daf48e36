package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/stream"
	"github.com/stitchllm/stitch/upstream"
)

// output is a turn's result as it streams: the converter (token ids → Responses events), timing,
// and the terminal event held back until the checkpoint is durable.
type output struct {
	conv       *stream.Converter
	start      time.Time
	firstToken time.Time
	now        func() time.Time
	terminal   []stream.Event // the terminal event, held until persisted
	failed     bool           // the response was failed after the stream ended (store error)
	forced     []uint32       // prompt-forced output ids, fed to the parser before upstream's
	sentMax    int            // the max_tokens sent upstream
	lowered    int            // when > 0: the max_tokens the upstream applied, below sentMax
	buffers    *stream.BufferPool
	// echoDiffers reports, once per generation, a prompt echo other than the prompt sent.
	echoDiffers func(ctx context.Context, sent, echoed int)
}

// The upstream read buffers kept between generations (Server.readBuffers): a generation whose
// prompt echo is P ids reads its first chunk into about 7 × P bytes, and gives that buffer back
// once the chunk is read for one of 32 KiB. Four large ones of at most 2 MiB (an echo of ~290k
// ids; a larger one is dropped) and four small ones: at most 8.5 MiB idle.
const (
	readBuffersKept    = 4
	readBufferMaxBytes = 2 << 20
)

func (s *Server) newOutput(t *turn) *output {
	req := t.req
	resp := stream.Response{
		Model: req.Model, Instructions: nil, ParallelToolCalls: req.ParallelToolCalls,
		PreviousResponseID: req.PreviousResponseID, Reasoning: req.ReasoningJSON, Store: req.Store,
		Text: req.TextJSON, ToolChoice: req.ToolChoice.Raw, Tools: req.Tools, Truncation: req.Truncation,
		User: req.User, Metadata: req.Metadata, Background: req.Background, Conversation: req.Conversation,
		TopLogprobs: req.TopLogprobs, PromptCacheKey: req.PromptCacheKey, SafetyIdentifier: req.SafetyIdentifier, ServiceTier: req.ServiceTier,
	}
	if req.MaxToolCalls >= 0 {
		n := req.MaxToolCalls
		resp.MaxToolCalls = &n
	}
	if req.Instructions != nil {
		resp.Instructions = appendJSONString(nil, *req.Instructions)
	}
	if req.MaxOutputTokens > 0 {
		n := req.MaxOutputTokens
		resp.MaxOutputTokens = &n
	}
	resp.Temperature = rawFloat(req.Temperature)
	resp.TopP = rawFloat(req.TopP)
	eopts := stream.EmitterOptions{Response: resp, NewID: s.opts.NewID, Now: s.opts.Now}
	if m, ok := t.model.Family.(family.CallIDMinter); ok {
		eopts.NewCallID = func() string { return m.NewCallID(s.opts.NewID) }
	}
	if req.Background {
		eopts.Response.ID = s.opts.NewID("resp") // the run's key, before the first event
	}
	if req.IncludeEncrypted && s.opts.Reseed != nil {
		// The response id must be known before the first event to seal it into reasoning items.
		if eopts.Response.ID == "" {
			eopts.Response.ID = s.opts.NewID("resp")
		}
		rid, tenant := eopts.Response.ID, t.tenant
		eopts.OnItemDone = func(it *stream.Item, _ stream.ItemRange) {
			if it.Type == stream.ItemReasoning {
				it.EncryptedContent = s.opts.Reseed.seal(tenant, rid, it.ID)
			}
		}
	}
	dec, lpm := logprobMapper(t.model, req, t.model.NewDecoder()) // logprobs.go
	parser := t.model.Family.NewParser(dec, family.Turn{ReasoningOpen: t.prompt.ReasoningOpen, ParallelToolCalls: req.ParallelToolCalls,
		Tools: toolSchemas(req.Tools), ReasoningOff: reasoningOff(t.kwargs, t.model.Family.ReasoningSwitch())})
	copts := withToolPolicy(stream.ConverterOptions{Output: parser, Emitter: eopts, Logprobs: lpm}, req) // toolpolicy.go
	conv := stream.NewConverter(copts)
	out := &output{conv: conv, start: t.start, now: s.opts.Now, forced: t.forced, sentMax: t.maxTokens, buffers: s.readBuffers}
	out.echoDiffers = func(ctx context.Context, sent, echoed int) {
		s.metrics.promptEchoMismatch.Inc()
		t.log.LogAttrs(ctx, slog.LevelWarn, "the model server echoed a prompt other than the one sent",
			slog.Int("prompt_tokens", sent), slog.Int("echoed_tokens", echoed))
	}
	return out
}

// promptArray returns the pieces of a request's JSON (CompletionRequest.Parts) that hold its
// prompt array's contents, between the brackets, without copying them: the head ends with
// `"prompt":[`, any middle part is ids already encoded (PromptPrefix), and the last part's ids
// end at its first ']' (ids are digits and commas). ok is false for any other layout; the echo is
// then only counted.
func promptArray(parts [][]byte) (array [][]byte, ok bool) {
	if len(parts) < 2 || !bytes.HasSuffix(parts[0], []byte(`"prompt":[`)) {
		return nil, false
	}
	last := parts[len(parts)-1]
	end := bytes.IndexByte(last, ']')
	if end < 0 {
		return nil, false
	}
	array = make([][]byte, 0, len(parts)-1)
	array = append(array, parts[1:len(parts)-1]...)
	return append(array, last[:end]), true
}

// toolSchemas returns the request's function tools (namespace functions included) for the output
// parser's value conversion; the tools were validated with the request.
func toolSchemas(raw json.RawMessage) []stream.ToolSchema {
	tools, _, err := render.ParseResponsesTools(raw)
	if err != nil {
		return nil
	}
	out := make([]stream.ToolSchema, len(tools))
	for i, t := range tools {
		out[i] = stream.ToolSchema{Name: t.Name, Parameters: t.Parameters}
	}
	return out
}

func rawFloat(raw []byte) *float64 {
	if len(raw) == 0 {
		return nil
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return nil
	}
	return &f
}

func (o *output) begin() []stream.Event { return o.conv.Start(nil) }

// beginQueued is begin for a background response (response.queued between created and in_progress).
func (o *output) beginQueued() []stream.Event { return o.conv.StartQueued(nil) }

// consume reads upstream chunks until [DONE], an error, or ctx's end, handing non-terminal events to
// sink as they come. It returns nil when the stream ended cleanly; the terminal event is then held
// (see finish). A sink write error (client gone) stops reading; ctx is then cancelled by net/http.
//
// Events are queued, not flushed one by one: the sink is flushed just before each read of body (so
// nothing is held while waiting for upstream, and the first token leaves as soon as the data that
// carried it is processed), and when its queue passes a bound. An upstream that delivers many
// chunks at once then costs one write to the client, as a reverse proxy's copy loop does (issue 20).
func (o *output) consume(ctx context.Context, up upstreamStream, sink eventSink) error {
	var next func() (*stream.Chunk, error)
	if up.chunks != nil {
		next = func() (*stream.Chunk, error) { // one Next, one wait for the engine: flush first
			if err := sink.flush(); err != nil {
				return nil, fmt.Errorf("%w: %w", errClientWrite, err)
			}
			return up.chunks.Next()
		}
	} else {
		chunks := stream.NewChunkReader(flushBeforeRead{r: up.body, sink: sink})
		chunks.UseBuffers(o.buffers)
		// Every return below ends the reading: nothing kept from the chunks aliases the buffer.
		defer chunks.Release()
		// vLLM's first chunk echoes the prompt (return_token_ids): it is checked against the bytes
		// sent, not counted, and read into one buffer (issue 32). An upstream that echoes nothing
		// costs nothing: the buffer grows to the echo's size only when a first event needs it.
		if array, ok := promptArray(up.request); ok {
			chunks.ExpectPromptEcho(up.promptIDs, array...)
		} else {
			chunks.ExpectPromptEcho(up.promptIDs)
		}
		next = chunks.Next
	}
	echoReported := false
	var events []stream.Event
	if len(o.forced) > 0 {
		events = o.conv.Chunk(events, &stream.Chunk{TokenIDs: o.forced})
		if len(events) > 0 {
			if err := sink.write(events); err != nil {
				return fmt.Errorf("write to client: %w", err)
			}
		}
	}
	for {
		ch, err := next()
		switch {
		case errors.Is(err, io.EOF):
			o.checkLoweredLimit()
			return o.hold(sink, o.conv.End(events[:0]))
		case errors.Is(err, errClientWrite):
			return err
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			code, msg := "server_error", "The model server stream ended unexpectedly."
			switch {
			case errors.Is(err, stream.ErrTruncated):
				msg = "The model server closed the stream before the response finished."
			case errors.Is(err, upstream.ErrTimeout):
				code, msg = "upstream_timeout", "The model server stopped sending tokens; the response timed out."
			}
			_ = o.hold(sink, o.conv.Fail(events[:0], code, msg))
			return fmt.Errorf("%w: %w", errUpstreamStream, err)
		}
		if ch.Err == nil && len(ch.TokenIDs) == 0 && ch.Text != "" {
			// stitch decodes ids, never text: an upstream ignoring return_token_ids would
			// otherwise yield an empty "completed" answer (issue 14, finding 11).
			_ = o.hold(sink, o.conv.Fail(events[:0], "upstream_error", "The model server returned text without token ids (it ignores return_token_ids); this server cannot use it."))
			return fmt.Errorf("%w: %w", errUpstreamStream, upstream.ErrNoTokenIDs)
		}
		if ch.PromptEchoDiffers && !echoReported && o.echoDiffers != nil {
			echoReported = true
			o.echoDiffers(ctx, up.promptIDs, ch.PromptTokens)
		}
		if o.firstToken.IsZero() && len(ch.TokenIDs) > 0 {
			o.firstToken = o.now()
		}
		events = o.conv.Chunk(events[:0], ch)
		if ch.Err != nil {
			_ = o.hold(sink, events)
			return fmt.Errorf("%w: %w", errUpstreamStream, ch.Err)
		}
		if len(events) > 0 {
			if err := sink.queue(events); err != nil {
				return fmt.Errorf("write to client: %w", err)
			}
		}
	}
}

// checkLoweredLimit reports the limit vLLM applied when it stopped for length before the
// max_tokens stitch sent: vLLM caps max_tokens itself with the model's generation_config
// (max_new_tokens; vllm/entrypoints/utils.py get_max_tokens takes the minimum with
// default_sampling_params["max_tokens"]), and the response must not claim the client's
// max_output_tokens was what ended it.
func (o *output) checkLoweredLimit() {
	if o.conv.FinishReason() != stream.FinishLength || o.sentMax <= 0 {
		return
	}
	all := len(o.conv.TokenIDs())
	if gen := all - len(o.forced); gen >= 0 && gen < o.sentMax {
		o.lowered = gen
		o.conv.Emitter().SetMaxOutputTokens(all) // the client's output counts prompt-forced ids too
	}
}

// flushBeforeRead flushes sink's queued events before every read of r: the decoder reads only when
// it has no complete upstream event buffered, so the client gets everything decided so far
// before the proxy waits for more.
type flushBeforeRead struct {
	r    io.Reader
	sink eventSink
}

func (f flushBeforeRead) Read(p []byte) (int, error) {
	if err := f.sink.flush(); err != nil {
		return 0, fmt.Errorf("%w: %w", errClientWrite, err)
	}
	return f.r.Read(p)
}

// errClientWrite marks a failed write to the client met while reading upstream.
var errClientWrite = errors.New("write to client")

// hold writes every event but the last (the terminal one), which it keeps for finish.
func (o *output) hold(sink eventSink, events []stream.Event) error {
	if len(events) == 0 {
		return nil
	}
	last := len(events) - 1
	o.terminal = []stream.Event{events[last]}
	if last == 0 {
		return nil
	}
	return sink.write(events[:last])
}

// finish returns the held terminal event, failing the response first if the stream did not end.
func (o *output) finish(runErr error) []stream.Event {
	if o.terminal == nil {
		msg := "The response was interrupted."
		if runErr != nil && errors.Is(runErr, context.Canceled) {
			msg = "The request was cancelled."
		}
		events := o.conv.Fail(nil, "server_error", msg)
		if n := len(events); n > 0 {
			o.terminal = []stream.Event{events[n-1]}
			return events
		}
	}
	return o.terminal
}

// failAfterPersist replaces the held terminal event with response.failed (same sequence number).
func (o *output) failAfterPersist(code, message string) []stream.Event {
	var seq int
	if len(o.terminal) == 1 {
		if ev, ok := o.terminal[0].(*stream.ResponseEvent); ok {
			seq = ev.SequenceNumber
		}
	}
	r := o.conv.Response()
	r.Status = stream.StatusFailed
	r.Error = &stream.ResponseError{Code: code, Message: message}
	r.CompletedAt, r.IncompleteDetails = 0, nil
	o.terminal = []stream.Event{&stream.ResponseEvent{Type: stream.EventResponseFailed, SequenceNumber: seq, Response: r}}
	o.failed = true
	return o.terminal
}

func (o *output) responseID() string { return o.conv.Emitter().ID() }

func (o *output) status() string {
	if o.failed {
		return stream.StatusFailed
	}
	return o.conv.Response().Status
}

func (o *output) responseJSON() []byte {
	if o.failed && len(o.terminal) == 1 {
		// The response.failed that failAfterPersist made: it carries error{code,message}, which a
		// non-stream client needs as much as a stream client does.
		if ev, ok := o.terminal[0].(*stream.ResponseEvent); ok {
			return ev.Response.AppendJSON(nil)
		}
	}
	r := o.conv.Response()
	if o.failed {
		r.Status = stream.StatusFailed
	}
	return r.AppendJSON(nil)
}

func (o *output) tokenIDs() []uint32 { return o.conv.TokenIDs() }

func (o *output) outputTokens() int { return len(o.conv.TokenIDs()) }

func (o *output) cachedTokens() int {
	if u := o.conv.Response().Usage; u != nil {
		return u.InputTokensDetails.CachedTokens
	}
	return 0
}

func (o *output) ttft() time.Duration {
	if o.firstToken.IsZero() {
		return 0
	}
	return o.firstToken.Sub(o.start)
}

// items returns the output items as stored items (failed responses keep none).
func (o *output) items() []store.Item {
	r := o.conv.Response()
	if r.Status == stream.StatusFailed || o.failed {
		return nil
	}
	out := make([]store.Item, 0, len(r.Output))
	for i := range r.Output {
		it := &r.Output[i]
		out = append(out, store.Item{ID: it.ID, Data: storedItemJSON(it)}) // logprobs.go
	}
	return out
}

// eventSink receives events in order.
type eventSink interface {
	// write sends events (and any queued before them) to the client now.
	write(events []stream.Event) error
	// queue takes events that may wait for the next flush or write.
	queue(events []stream.Event) error
	// flush sends the queued events.
	flush() error
}

// maxQueued bounds the bytes an sseSink queues before it writes and flushes by itself: a burst of
// upstream data is forwarded in pieces of about this size, never held whole.
const maxQueued = 32 << 10

// sseSink writes events as server-sent events. write sends at once; queue holds events (encoded,
// in its own buffer) until flush, write, or maxQueued bytes, so a batch costs one Write and one
// flush of the ResponseWriter.
type sseSink struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf []byte // encoded events not yet written
	hdr bool
	err error // the first write or flush error; every later call returns it
}

func newSSESink(w http.ResponseWriter) *sseSink {
	return &sseSink{w: w, rc: http.NewResponseController(w), buf: make([]byte, 0, 4096)}
}

func (s *sseSink) write(events []stream.Event) error {
	if err := s.queue(events); err != nil {
		return err
	}
	return s.flushNow()
}

func (s *sseSink) queue(events []stream.Event) error {
	if s.err != nil {
		return s.err
	}
	for _, ev := range events {
		s.buf = stream.AppendEvent(s.buf, ev)
	}
	if len(s.buf) >= maxQueued {
		return s.flushNow()
	}
	return nil
}

// writeRaw sends events already encoded as server-sent events (a background response's log).
func (s *sseSink) writeRaw(events [][]byte) error {
	if s.err != nil {
		return s.err
	}
	for _, ev := range events {
		s.buf = append(s.buf, ev...)
	}
	return s.flushNow()
}

func (s *sseSink) flush() error {
	if len(s.buf) == 0 || s.err != nil {
		return s.err
	}
	return s.flushNow()
}

func (s *sseSink) flushNow() error {
	if s.err != nil {
		return s.err
	}
	if !s.hdr {
		h := s.w.Header()
		h.Set("Content-Type", "text/event-stream; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
		h.Set("Connection", "keep-alive")
		h.Set("X-Accel-Buffering", "no")
		s.w.WriteHeader(http.StatusOK)
		s.hdr = true
	}
	if len(s.buf) > 0 {
		_, err := s.w.Write(s.buf)
		s.buf = s.buf[:0]
		if err != nil {
			s.err = fmt.Errorf("write events: %w", err)
			return s.err
		}
	}
	if err := s.rc.Flush(); err != nil {
		s.err = fmt.Errorf("flush events: %w", err)
	}
	return s.err
}

// discardSink drops events (stream:false collects the final object instead).
type discardSink struct{}

func (discardSink) write([]stream.Event) error { return nil }
func (discardSink) queue([]stream.Event) error { return nil }
func (discardSink) flush() error               { return nil }
