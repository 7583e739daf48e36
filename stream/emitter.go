package stream

import (
	"strings"
	"time"
)

// ItemRange is the generated-token range [Start, End) that produced output
// item OutputIndex (see [Piece]). Start and End index the generated ids of the
// turn, 0-based.
type ItemRange struct {
	OutputIndex int
	ItemID      string
	Type        string // Item* constant
	Start, End  int
}

// EmitterOptions configures an [Emitter].
type EmitterOptions struct {
	// Response carries the request-echo fields (Model, Instructions, Tools,
	// ToolChoice, ParallelToolCalls, Store, Temperature, TopP, Metadata, …)
	// copied into every response snapshot. The Emitter sets ID, CreatedAt,
	// Status, CompletedAt, Error, IncompleteDetails, Output and Usage; an ID
	// already set here is kept (the caller may need it before the stream).
	Response Response
	// NewID returns a fresh unique id for a prefix: "resp", "msg", "fc",
	// "call" or "rs", formatted like "msg_<random>". Required.
	NewID func(prefix string) string
	// NewCallID, if set, returns the call_id of a call the model wrote no id for (a family whose
	// templates accept only their own id form, family.CallIDMinter); nil: NewID("call").
	NewCallID func() string
	// Now returns the current time for created_at and completed_at; nil means
	// time.Now.
	Now func() time.Time
	// OnItemDone, if set, is called for each item just before its
	// output_item.done event is made; it may set it.EncryptedContent (reasoning).
	OnItemDone func(it *Item, r ItemRange)
}

// Emitter is the Responses stream state machine of one response. Fed [Piece]s
// in order, it produces the ordered events clients require:
//
//	response.created → response.in_progress →
//	  per item: output_item.added →
//	    message:       content_part.added → output_text.delta×N → output_text.done → content_part.done
//	    reasoning:     content_part.added → reasoning_text.delta×N → reasoning_text.done → content_part.done
//	    function_call: function_call_arguments.delta×N → function_call_arguments.done
//	  → output_item.done
//	→ response.completed | response.incomplete | response.failed
//
// with sequence_number counting from 0 and item ids identical in every event
// and in the final object ([Converter.Response], also what stream:false returns).
// Consecutive deltas of one item given in one call are merged into one event.
//
// Methods append to and return dst, like append. Events are snapshots: later
// calls do not modify them. After the terminal event, calls append nothing.
// An Emitter is not safe for concurrent use. A [Converter] creates and drives
// one ([Converter.Emitter]).
type Emitter struct {
	opts   EmitterOptions
	now    func() time.Time
	resp   Response
	seq    int
	items  []Item
	ranges []ItemRange
	open   int // index of the open item in items, or -1
	text   strings.Builder
	lps    []Logprob // logprobs of the open message's text
	merge  int       // len(dst) at the start of the current call; deltas after it may merge
	// deltas is the slab text delta events are cut from: one allocation per deltaSlab tokens
	// instead of one per token (issue 32). An event handed out is never reused; the garbage
	// collector frees a slab once none of its events is referenced.
	deltas []textDeltaEvent
	ended  bool
	// malformed: a function_call item ended incomplete (or the parser reported
	// a broken format, SetMalformed) while the output was not cut by the limit.
	malformed bool
}

// newEmitter returns an Emitter. It panics if opts.NewID is nil.
func newEmitter(opts EmitterOptions) *Emitter {
	if opts.NewID == nil {
		panic("stream: newEmitter without NewID")
	}
	e := &Emitter{opts: opts, now: opts.Now, resp: opts.Response, open: -1}
	if e.now == nil {
		e.now = time.Now
	}
	if e.resp.ID == "" {
		e.resp.ID = opts.NewID("resp")
	}
	e.resp.CreatedAt = e.now().Unix()
	e.resp.Status = StatusInProgress
	e.resp.Output = nil
	e.resp.Usage = nil
	e.resp.Error = nil
	e.resp.IncompleteDetails = nil
	e.resp.CompletedAt = 0
	return e
}

// ID returns the response id ("resp_…").
func (e *Emitter) ID() string { return e.resp.ID }

// SetMaxOutputTokens sets the response's max_output_tokens (reported from the terminal event
// on): the server reports the limit the model server applied when it was lower than requested.
func (e *Emitter) SetMaxOutputTokens(n int) { e.resp.MaxOutputTokens = &n }

// snapshot returns a snapshot of the response object: status in_progress
// until Complete or Fail, then the final object.
func (e *Emitter) snapshot() *Response {
	r := e.resp
	r.Output = make([]Item, 0, len(e.items))
	for i := range e.items {
		if i == e.open {
			break
		}
		r.Output = append(r.Output, e.items[i])
	}
	return &r
}

func (e *Emitter) nextSeq() int {
	n := e.seq
	e.seq++
	return n
}

// start appends response.created and response.in_progress.
func (e *Emitter) start(dst []Event) []Event {
	if e.ended || e.seq > 0 {
		return dst
	}
	dst = append(dst, &ResponseEvent{Type: EventResponseCreated, SequenceNumber: e.nextSeq(), Response: e.snapshot()})
	return append(dst, &ResponseEvent{Type: EventResponseInProgress, SequenceNumber: e.nextSeq(), Response: e.snapshot()})
}

// startQueued is start for a background response, as OpenAI streams one: response.created and
// response.queued with status queued, then response.in_progress. stitch admits a background
// response before it answers (its slot is taken), so the queued phase is these two events.
func (e *Emitter) startQueued(dst []Event) []Event {
	if e.ended || e.seq > 0 {
		return dst
	}
	queued := func() *Response {
		r := e.snapshot()
		r.Status = StatusQueued
		return r
	}
	dst = append(dst, &ResponseEvent{Type: EventResponseCreated, SequenceNumber: e.nextSeq(), Response: queued()})
	dst = append(dst, &ResponseEvent{Type: EventResponseQueued, SequenceNumber: e.nextSeq(), Response: queued()})
	return append(dst, &ResponseEvent{Type: EventResponseInProgress, SequenceNumber: e.nextSeq(), Response: e.snapshot()})
}

// apply appends the events for pieces.
func (e *Emitter) apply(dst []Event, pieces ...Piece) []Event {
	if e.ended {
		return dst
	}
	if e.seq == 0 {
		dst = e.start(dst)
	}
	e.merge = len(dst)
	for i := range pieces {
		dst = e.piece(dst, &pieces[i], StatusCompleted)
	}
	return dst
}

func (e *Emitter) piece(dst []Event, pc *Piece, doneStatus string) []Event {
	switch pc.Kind {
	case PieceReasoning:
		dst = e.ensure(dst, ItemReasoning, "", "")
		return e.textDelta(dst, EventReasoningTextDelta, pc.Text)
	case PieceText:
		dst = e.ensure(dst, ItemMessage, "", "")
		dst = e.textDelta(dst, EventOutputTextDelta, pc.Text)
		e.addLogprobs(dst, pc)
		return dst
	case PieceToolCall:
		// The model's own call id (Mistral, Kimi) is the call_id from
		// output_item.added on (issue 16 item 6).
		return e.ensure(dst, ItemFunctionCall, pc.Text, pc.CallID)
	case PieceArguments:
		if e.open < 0 || e.items[e.open].Type != ItemFunctionCall {
			return dst // arguments without a call: nothing to attach them to
		}
		it := &e.items[e.open]
		e.text.WriteString(pc.Text)
		if n := len(dst); n > e.merge {
			if last, ok := dst[n-1].(*argumentsDeltaEvent); ok && last.ItemID == it.ID {
				last.Delta += pc.Text
				return dst
			}
		}
		return append(dst, &argumentsDeltaEvent{SequenceNumber: e.nextSeq(), ItemID: it.ID, OutputIndex: e.open, Delta: pc.Text})
	case PieceReasoningDone, PieceTextDone, PieceToolCallDone:
		want := ItemFunctionCall
		switch pc.Kind {
		case PieceReasoningDone:
			want = ItemReasoning
		case PieceTextDone:
			want = ItemMessage
		}
		if e.open < 0 || e.items[e.open].Type != want {
			return dst
		}
		if pc.CallID != "" {
			e.items[e.open].CallID = pc.CallID
		}
		status := doneStatus
		if pc.Incomplete {
			status = StatusIncomplete
			if want == ItemFunctionCall {
				e.malformed = true
			}
		}
		return e.close(dst, status, pc.Start, pc.End)
	}
	return dst
}

// ensure makes an item of type typ the open item, closing another open one.
func (e *Emitter) ensure(dst []Event, typ, name, callID string) []Event {
	if e.open >= 0 {
		if e.items[e.open].Type == typ && typ != ItemFunctionCall {
			return dst
		}
		dst = e.close(dst, StatusCompleted, -1, -1)
	}
	it := Item{Type: typ, Status: StatusInProgress}
	var part ContentPart
	switch typ {
	case ItemMessage:
		it.ID = e.opts.NewID("msg")
		it.Role = "assistant"
		part.Type = PartOutputText
	case ItemReasoning:
		it.ID = e.opts.NewID("rs")
		part.Type = PartReasoningText
	case ItemFunctionCall:
		it.ID = e.opts.NewID("fc")
		it.CallID = callID
		if it.CallID == "" && e.opts.NewCallID != nil {
			it.CallID = e.opts.NewCallID()
		}
		if it.CallID == "" {
			it.CallID = e.opts.NewID("call")
		}
		it.Name = name
	}
	e.items = append(e.items, it)
	e.open = len(e.items) - 1
	e.text.Reset()
	e.lps = nil
	added := it
	dst = append(dst, &outputItemEvent{Type: EventOutputItemAdded, SequenceNumber: e.nextSeq(), OutputIndex: e.open, Item: &added})
	if typ != ItemFunctionCall {
		dst = append(dst, &contentPartEvent{Type: EventContentPartAdded, SequenceNumber: e.nextSeq(), ItemID: it.ID, OutputIndex: e.open, Part: part})
	}
	e.merge = len(dst)
	return dst
}

func (e *Emitter) textDelta(dst []Event, typ, delta string) []Event {
	it := &e.items[e.open]
	e.text.WriteString(delta)
	if n := len(dst); n > e.merge {
		if last, ok := dst[n-1].(*textDeltaEvent); ok && last.ItemID == it.ID {
			last.Delta += delta
			return dst
		}
	}
	ev := e.newTextDelta()
	*ev = textDeltaEvent{Type: typ, SequenceNumber: e.nextSeq(), ItemID: it.ID, OutputIndex: e.open, Delta: delta}
	return append(dst, ev)
}

// deltaSlab is how many text delta events one allocation holds (96 bytes each).
const deltaSlab = 32

// newTextDelta returns a zero text delta event cut from e.deltas.
func (e *Emitter) newTextDelta() *textDeltaEvent {
	if len(e.deltas) == 0 {
		e.deltas = make([]textDeltaEvent, deltaSlab)
	}
	ev := &e.deltas[0]
	e.deltas = e.deltas[1:]
	return ev
}

// addLogprobs records a message text piece's logprobs in the open message and in the delta
// event just made (or merged into) for it, the last of dst.
func (e *Emitter) addLogprobs(dst []Event, pc *Piece) {
	if len(pc.Logprobs) == 0 && pc.LogprobCont == "" {
		return
	}
	ev, _ := dst[len(dst)-1].(*textDeltaEvent)
	if pc.LogprobCont != "" {
		if n := len(e.lps); n > 0 {
			e.lps[n-1].Token += pc.LogprobCont
		}
		// An event that already lists tokens (a merged delta) lists the one continued last.
		if ev != nil && len(ev.Logprobs) > 0 {
			ev.Logprobs[len(ev.Logprobs)-1].Token += pc.LogprobCont
		}
	}
	e.lps = append(e.lps, pc.Logprobs...)
	if ev != nil {
		ev.Logprobs = append(ev.Logprobs, pc.Logprobs...)
	}
}

// close finishes the open item with status; start and end are its token
// range (-1 when unknown).
func (e *Emitter) close(dst []Event, status string, start, end int) []Event {
	idx := e.open
	it := &e.items[idx]
	text := e.text.String()
	it.Status = status
	seq := func() int { return e.nextSeq() }
	switch it.Type {
	case ItemFunctionCall:
		it.Arguments = text
		dst = append(dst, &argumentsDoneEvent{SequenceNumber: seq(), ItemID: it.ID, OutputIndex: idx, Name: it.Name, Arguments: text})
	default:
		part := ContentPart{Type: PartOutputText, Text: text}
		doneType := EventOutputTextDone
		if it.Type == ItemReasoning {
			part.Type = PartReasoningText
			doneType = EventReasoningTextDone
		}
		if it.Type == ItemMessage {
			part.Logprobs, e.lps = e.lps, nil
		}
		it.Content = []ContentPart{part}
		dst = append(dst,
			&textDoneEvent{Type: doneType, SequenceNumber: seq(), ItemID: it.ID, OutputIndex: idx, Text: text, Logprobs: part.Logprobs},
			&contentPartEvent{Type: EventContentPartDone, SequenceNumber: seq(), ItemID: it.ID, OutputIndex: idx, Part: part})
	}
	r := ItemRange{OutputIndex: idx, ItemID: it.ID, Type: it.Type, Start: start, End: end}
	if e.opts.OnItemDone != nil {
		e.opts.OnItemDone(it, r)
	}
	e.ranges = append(e.ranges, r)
	done := *it
	dst = append(dst, &outputItemEvent{Type: EventOutputItemDone, SequenceNumber: seq(), OutputIndex: idx, Item: &done})
	e.open = -1
	e.text.Reset()
	e.merge = len(dst)
	return dst
}

// setMalformed reports that the model broke its output format (the parser's
// Malformed): Complete then ends the response incomplete, as it does when a
// function_call item ended incomplete.
func (e *Emitter) setMalformed() { e.malformed = true }

// complete ends the response after the upstream finished with finishReason
// (vLLM's finish_reason): "length" → response.incomplete with
// incomplete_details.reason "max_output_tokens" (items still open, or closed
// by pieces, end "incomplete"); "abort" or "error" → response.failed
// (code "server_error"); anything else → response.completed, unless a
// function_call item ended incomplete (a malformed or cut-off call) or
// SetMalformed was called: then response.incomplete with reason
// "malformed_tool_call". pieces are the parser's final pieces
// (Parser.Finish). usage may be nil (usage stays null).
func (e *Emitter) complete(dst []Event, finishReason string, usage *Usage, pieces ...Piece) []Event {
	if e.ended {
		return dst
	}
	switch finishReason {
	case FinishAbort, FinishError:
		e.setUsage(usage)
		return e.fail(dst, "server_error", "upstream generation ended with finish_reason "+finishReason, pieces...)
	}
	if e.seq == 0 {
		dst = e.start(dst)
	}
	doneStatus := StatusCompleted
	if finishReason == FinishLength {
		doneStatus = StatusIncomplete
	}
	e.merge = len(dst)
	for i := range pieces {
		dst = e.piece(dst, &pieces[i], doneStatus)
	}
	if e.open >= 0 {
		dst = e.close(dst, doneStatus, -1, -1)
	}
	e.setUsage(usage)
	typ := EventResponseCompleted
	switch {
	case finishReason == FinishLength:
		typ = EventResponseIncomplete
		e.resp.Status = StatusIncomplete
		e.resp.IncompleteDetails = &IncompleteDetails{Reason: ReasonMaxOutputTokens}
	case e.malformed:
		typ = EventResponseIncomplete
		e.resp.Status = StatusIncomplete
		e.resp.IncompleteDetails = &IncompleteDetails{Reason: ReasonMalformedToolCall}
	default:
		e.resp.Status = StatusCompleted
		e.resp.CompletedAt = e.now().Unix()
	}
	return e.terminal(dst, typ)
}

// fail ends the response with response.failed and response.error{code,
// message} (code e.g. "server_error"). pieces are the parser's final pieces
// (Parser.Finish); items they close, and items still open, end "incomplete".
func (e *Emitter) fail(dst []Event, code, message string, pieces ...Piece) []Event {
	if e.ended {
		return dst
	}
	if e.seq == 0 {
		dst = e.start(dst)
	}
	e.merge = len(dst)
	for i := range pieces {
		dst = e.piece(dst, &pieces[i], StatusIncomplete)
	}
	if e.open >= 0 {
		dst = e.close(dst, StatusIncomplete, -1, -1)
	}
	e.resp.Status = StatusFailed
	e.resp.Error = &ResponseError{Code: code, Message: message}
	return e.terminal(dst, EventResponseFailed)
}

// setUsage records token usage for the final object (Complete does it; call
// it before Fail to report usage on a failed response). reasoning_tokens is
// the length of the finished reasoning items' token ranges.
func (e *Emitter) setUsage(u *Usage) {
	if u == nil {
		return
	}
	reasoning := 0
	for _, r := range e.ranges {
		if r.Type == ItemReasoning && r.End > r.Start {
			reasoning += r.End - r.Start
		}
	}
	e.resp.Usage = &ResponseUsage{
		InputTokens:         u.PromptTokens,
		InputTokensDetails:  InputTokensDetails{CachedTokens: u.CachedTokens},
		OutputTokens:        u.CompletionTokens,
		OutputTokensDetails: OutputTokensDetails{ReasoningTokens: reasoning},
		TotalTokens:         u.PromptTokens + u.CompletionTokens,
	}
}

func (e *Emitter) terminal(dst []Event, typ string) []Event {
	e.ended = true
	return append(dst, &ResponseEvent{Type: typ, SequenceNumber: e.nextSeq(), Response: e.snapshot()})
}
