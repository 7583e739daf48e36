package stream

// ConverterOptions configures a [Converter].
type ConverterOptions struct {
	// Output is the turn's output parser (a model family's own, e.g. from
	// package family). Required.
	Output  OutputParser
	Emitter EmitterOptions
	// Logprobs, when set, gives message text deltas the logprobs of their tokens; its Decoder
	// must be the decoder Output decodes with.
	Logprobs *LogprobMapper
}

// Converter runs one turn: vLLM chunks in, Responses events out. It
// accumulates every generated token id (the token artifact's output part),
// parses them with its [OutputParser] and emits with an [Emitter]:
//
//	c := stream.NewConverter(opts)
//	enc.EncodeAll(c.Start(nil))
//	for {
//		ch, err := chunks.Next()
//		if err == io.EOF { enc.EncodeAll(c.End(nil)); break }
//		if err != nil { enc.EncodeAll(c.Fail(nil, "server_error", msg)); break }
//		enc.EncodeAll(c.Chunk(nil, ch))
//	}
//
// Methods append to and return dst. A Converter is not safe for concurrent use.
type Converter struct {
	p      OutputParser
	e      *Emitter
	lp     *LogprobMapper
	ids    []uint32
	prompt int // prompt length from vLLM's echo (for usage when no usage chunk came)
	pieces []Piece
	usage  *Usage
	u      Usage
	finish string
}

// NewConverter returns a Converter. It panics if opts.Output or
// opts.Emitter.NewID is nil.
func NewConverter(opts ConverterOptions) *Converter {
	if opts.Output == nil {
		panic("stream: NewConverter without an Output parser")
	}
	return &Converter{p: opts.Output, e: newEmitter(opts.Emitter), lp: opts.Logprobs}
}

// Emitter returns the underlying Emitter (for ID and Ranges).
func (c *Converter) Emitter() *Emitter { return c.e }

// Start appends response.created and response.in_progress.
func (c *Converter) Start(dst []Event) []Event { return c.e.start(dst) }

// StartQueued appends a background response's first events: response.created, response.queued
// and response.in_progress.
func (c *Converter) StartQueued(dst []Event) []Event { return c.e.startQueued(dst) }

// Chunk consumes one upstream chunk. An in-stream upstream error fails the
// response (response.failed, code "server_error", the upstream message).
// The chunk is not retained.
func (c *Converter) Chunk(dst []Event, ch *Chunk) []Event {
	if c.e.ended {
		return dst
	}
	if ch.Err != nil {
		c.pieces = c.p.Finish(c.pieces[:0])
		c.mapLogprobs(c.pieces)
		c.e.setUsage(c.fallbackUsage())
		msg := ch.Err.Message
		if msg == "" {
			msg = ch.Err.Error()
		}
		return c.e.fail(dst, "server_error", msg, c.pieces...)
	}
	if ch.PromptTokens > 0 && c.prompt == 0 {
		c.prompt = ch.PromptTokens
	}
	base := len(c.ids)
	c.ids = append(c.ids, ch.TokenIDs...)
	c.pieces = c.pieces[:0]
	for i, id := range ch.TokenIDs {
		if c.lp == nil {
			c.pieces = c.p.Append(c.pieces, id)
			continue
		}
		var lp *TokenLogprob
		if i < len(ch.Logprobs) {
			lp = &ch.Logprobs[i]
		}
		c.lp.begin(base+i, lp)
		n := len(c.pieces)
		c.pieces = c.p.Append(c.pieces, id)
		c.mapLogprobs(c.pieces[n:])
	}
	if len(c.pieces) > 0 {
		dst = c.e.apply(dst, c.pieces...)
	}
	if ch.FinishReason != "" {
		c.finish = ch.FinishReason
	}
	if ch.Usage != nil {
		c.u = *ch.Usage
		c.usage = &c.u
	}
	return dst
}

// End finishes the turn after `data: [DONE]`: the parser's last pieces, then
// response.completed, response.incomplete (finish_reason "length"; or a tool
// call the model broke, see Emitter.complete) or response.failed
// (finish_reason "abort"/"error"). Without a usage chunk, usage is counted
// from the ids seen.
func (c *Converter) End(dst []Event) []Event {
	if c.e.ended {
		return dst
	}
	c.pieces = c.p.Finish(c.pieces[:0])
	c.mapLogprobs(c.pieces)
	if m, ok := c.p.(malformedReporter); ok && m.Malformed() {
		c.e.setMalformed()
	}
	return c.e.complete(dst, c.finish, c.fallbackUsage(), c.pieces...)
}

// Fail ends the turn with response.failed (e.g. on ErrTruncated, a read error
// or cancellation): open items end "incomplete".
func (c *Converter) Fail(dst []Event, code, message string) []Event {
	if c.e.ended {
		return dst
	}
	c.pieces = c.p.Finish(c.pieces[:0])
	c.mapLogprobs(c.pieces)
	c.e.setUsage(c.fallbackUsage())
	return c.e.fail(dst, code, message, c.pieces...)
}

// mapLogprobs gives the message text pieces among pieces their tokens' logprobs, and keeps the
// mapper's place at the end of every finished item.
func (c *Converter) mapLogprobs(pieces []Piece) {
	if c.lp == nil {
		return
	}
	for i := range pieces {
		switch pc := &pieces[i]; pc.Kind {
		case PieceText:
			pc.Logprobs, pc.LogprobCont = c.lp.attribute(pc.Text)
		case PieceReasoningDone, PieceTextDone, PieceToolCallDone:
			c.lp.skipTo(pc.End)
		}
	}
}

// malformedReporter is the optional method of an [OutputParser] that reports
// a tool call broken after it began ([FamilyParser], [HarmonyParser]).
type malformedReporter interface{ Malformed() bool }

func (c *Converter) fallbackUsage() *Usage {
	if c.usage != nil {
		return c.usage
	}
	return &Usage{PromptTokens: c.prompt, CompletionTokens: len(c.ids)}
}

// TokenIDs returns every generated id so far, including a final stop id.
// The slice is owned by the Converter and grows with later chunks.
func (c *Converter) TokenIDs() []uint32 { return c.ids }

// FinishReason returns the last finish_reason seen ("" before the end).
func (c *Converter) FinishReason() string { return c.finish }

// Response returns a snapshot of the response object (final after End/Fail).
func (c *Converter) Response() *Response { return c.e.snapshot() }

// Ranges returns each finished item's generated-token range, in output order.
func (c *Converter) Ranges() []ItemRange { return c.e.ranges }
