package stream

// Responses streaming event types, as sent in the SSE `event:` field and the
// JSON "type" member.
const (
	EventResponseCreated        = "response.created"
	EventResponseQueued         = "response.queued"
	EventResponseInProgress     = "response.in_progress"
	EventResponseCompleted      = "response.completed"
	EventResponseIncomplete     = "response.incomplete"
	EventResponseFailed         = "response.failed"
	EventOutputItemAdded        = "response.output_item.added"
	EventOutputItemDone         = "response.output_item.done"
	EventContentPartAdded       = "response.content_part.added"
	EventContentPartDone        = "response.content_part.done"
	EventOutputTextDelta        = "response.output_text.delta"
	EventOutputTextDone         = "response.output_text.done"
	EventReasoningTextDelta     = "response.reasoning_text.delta"
	EventReasoningTextDone      = "response.reasoning_text.done"
	EventFunctionArgumentsDelta = "response.function_call_arguments.delta"
	EventFunctionArgumentsDone  = "response.function_call_arguments.done"
)

// Event is one Responses streaming event. The concrete types are the *Event
// structs of this package ([ResponseEvent] for the response's own events, the
// item and delta events unexported: callers write them, they do not read them);
// each carries its sequence_number. Integer indexes
// and sequence numbers are always marshaled (0 included), and no event has a
// top-level "error" member (the Go SDK treats any such key as a failure).
type Event interface {
	// EventType returns the event's type, e.g. "response.output_text.delta".
	EventType() string
	// AppendJSON appends the event's JSON object (the SSE data) to dst.
	AppendJSON(dst []byte) []byte
}

var (
	_ Event = (*ResponseEvent)(nil)
	_ Event = (*outputItemEvent)(nil)
	_ Event = (*contentPartEvent)(nil)
	_ Event = (*textDeltaEvent)(nil)
	_ Event = (*textDoneEvent)(nil)
	_ Event = (*argumentsDeltaEvent)(nil)
	_ Event = (*argumentsDoneEvent)(nil)
)

// ResponseEvent is response.created, response.queued, response.in_progress,
// response.completed, response.incomplete or response.failed: a snapshot of the whole response.
type ResponseEvent struct {
	Type           string // one of the EventResponse* constants
	SequenceNumber int
	Response       *Response // snapshot; not modified after the event is made
}

// EventType implements Event.
func (e *ResponseEvent) EventType() string { return e.Type }

// AppendJSON implements Event.
func (e *ResponseEvent) AppendJSON(dst []byte) []byte {
	dst = appendHead(dst, e.Type, e.SequenceNumber)
	dst = append(dst, `,"response":`...)
	dst = e.Response.AppendJSON(dst)
	return append(dst, '}')
}

// outputItemEvent is response.output_item.added or response.output_item.done.
type outputItemEvent struct {
	Type           string // EventOutputItemAdded or EventOutputItemDone
	SequenceNumber int
	OutputIndex    int
	Item           *Item // snapshot; not modified after the event is made
}

// EventType implements Event.
func (e *outputItemEvent) EventType() string { return e.Type }

// AppendJSON implements Event.
func (e *outputItemEvent) AppendJSON(dst []byte) []byte {
	dst = appendHead(dst, e.Type, e.SequenceNumber)
	dst = append(dst, `,"output_index":`...)
	dst = appendInt(dst, e.OutputIndex)
	dst = append(dst, `,"item":`...)
	dst = e.Item.AppendJSON(dst)
	return append(dst, '}')
}

// contentPartEvent is response.content_part.added or response.content_part.done.
type contentPartEvent struct {
	Type           string // EventContentPartAdded or EventContentPartDone
	SequenceNumber int
	ItemID         string
	OutputIndex    int
	ContentIndex   int
	Part           ContentPart
}

// EventType implements Event.
func (e *contentPartEvent) EventType() string { return e.Type }

// AppendJSON implements Event.
func (e *contentPartEvent) AppendJSON(dst []byte) []byte {
	dst = appendItemHead(dst, e.Type, e.SequenceNumber, e.ItemID, e.OutputIndex)
	dst = append(dst, `,"content_index":`...)
	dst = appendInt(dst, e.ContentIndex)
	dst = append(dst, `,"part":`...)
	dst = e.Part.AppendJSON(dst)
	return append(dst, '}')
}

// textDeltaEvent is response.output_text.delta or response.reasoning_text.delta.
// Output text deltas carry an empty "logprobs" array, as OpenAI's do.
type textDeltaEvent struct {
	Type           string // EventOutputTextDelta or EventReasoningTextDelta
	SequenceNumber int
	ItemID         string
	OutputIndex    int
	ContentIndex   int
	Delta          string
	// Logprobs (output text) are the logprobs of the tokens this delta begins.
	Logprobs []Logprob
}

// EventType implements Event.
func (e *textDeltaEvent) EventType() string { return e.Type }

// AppendJSON implements Event.
func (e *textDeltaEvent) AppendJSON(dst []byte) []byte {
	dst = appendHead(dst, e.Type, e.SequenceNumber)
	return e.appendTail(dst)
}

// appendSSE is AppendEvent for a text delta, one per generated token: the event line and the
// JSON head up to the sequence number are one constant append (issue 32), the same bytes
// AppendEvent writes for any event.
func (e *textDeltaEvent) appendSSE(dst []byte) []byte {
	switch e.Type {
	case EventOutputTextDelta:
		dst = append(dst, "event: "+EventOutputTextDelta+"\ndata: {\"type\":\""+EventOutputTextDelta+"\",\"sequence_number\":"...)
	case EventReasoningTextDelta:
		dst = append(dst, "event: "+EventReasoningTextDelta+"\ndata: {\"type\":\""+EventReasoningTextDelta+"\",\"sequence_number\":"...)
	default:
		dst = append(dst, "event: "...)
		dst = append(dst, e.Type...)
		dst = append(dst, "\ndata: "...)
		dst = appendHead(dst, e.Type, e.SequenceNumber)
		return append(e.appendTail(dst), '\n', '\n')
	}
	dst = appendInt(dst, e.SequenceNumber)
	return append(e.appendTail(dst), '\n', '\n')
}

// appendTail appends what follows the sequence number.
func (e *textDeltaEvent) appendTail(dst []byte) []byte {
	dst = append(dst, `,"item_id":`...)
	dst = appendString(dst, e.ItemID)
	dst = append(dst, `,"output_index":`...)
	dst = appendInt(dst, e.OutputIndex)
	dst = append(dst, `,"content_index":`...)
	dst = appendInt(dst, e.ContentIndex)
	dst = append(dst, `,"delta":`...)
	dst = appendString(dst, e.Delta)
	if e.Type == EventOutputTextDelta {
		dst = append(dst, `,"logprobs":`...)
		dst = appendLogprobs(dst, e.Logprobs, false)
	}
	return append(dst, '}')
}

// textDoneEvent is response.output_text.done or response.reasoning_text.done.
type textDoneEvent struct {
	Type           string // EventOutputTextDone or EventReasoningTextDone
	SequenceNumber int
	ItemID         string
	OutputIndex    int
	ContentIndex   int
	Text           string // the whole text of the content part
	// Logprobs (output text) are the logprobs of every token of the text.
	Logprobs []Logprob
}

// EventType implements Event.
func (e *textDoneEvent) EventType() string { return e.Type }

// AppendJSON implements Event.
func (e *textDoneEvent) AppendJSON(dst []byte) []byte {
	dst = appendItemHead(dst, e.Type, e.SequenceNumber, e.ItemID, e.OutputIndex)
	dst = append(dst, `,"content_index":`...)
	dst = appendInt(dst, e.ContentIndex)
	dst = append(dst, `,"text":`...)
	dst = appendString(dst, e.Text)
	if e.Type == EventOutputTextDone {
		dst = append(dst, `,"logprobs":`...)
		dst = appendLogprobs(dst, e.Logprobs, false)
	}
	return append(dst, '}')
}

// argumentsDeltaEvent is response.function_call_arguments.delta.
type argumentsDeltaEvent struct {
	SequenceNumber int
	ItemID         string
	OutputIndex    int
	Delta          string // raw JSON text of the arguments, as generated
}

// EventType implements Event.
func (e *argumentsDeltaEvent) EventType() string { return EventFunctionArgumentsDelta }

// AppendJSON implements Event.
func (e *argumentsDeltaEvent) AppendJSON(dst []byte) []byte {
	dst = appendItemHead(dst, EventFunctionArgumentsDelta, e.SequenceNumber, e.ItemID, e.OutputIndex)
	dst = append(dst, `,"delta":`...)
	dst = appendString(dst, e.Delta)
	return append(dst, '}')
}

// argumentsDoneEvent is response.function_call_arguments.done.
type argumentsDoneEvent struct {
	SequenceNumber int
	ItemID         string
	OutputIndex    int
	Name           string // function name (sent as "name", as OpenAI does)
	Arguments      string // the concatenation of all deltas
}

// EventType implements Event.
func (e *argumentsDoneEvent) EventType() string { return EventFunctionArgumentsDone }

// AppendJSON implements Event.
func (e *argumentsDoneEvent) AppendJSON(dst []byte) []byte {
	dst = appendItemHead(dst, EventFunctionArgumentsDone, e.SequenceNumber, e.ItemID, e.OutputIndex)
	dst = append(dst, `,"name":`...)
	dst = appendString(dst, e.Name)
	dst = append(dst, `,"arguments":`...)
	dst = appendString(dst, e.Arguments)
	return append(dst, '}')
}

func appendHead(dst []byte, typ string, seq int) []byte {
	dst = append(dst, `{"type":`...)
	dst = appendString(dst, typ)
	dst = append(dst, `,"sequence_number":`...)
	return appendInt(dst, seq)
}

func appendItemHead(dst []byte, typ string, seq int, itemID string, outputIndex int) []byte {
	dst = appendHead(dst, typ, seq)
	dst = append(dst, `,"item_id":`...)
	dst = appendString(dst, itemID)
	dst = append(dst, `,"output_index":`...)
	return appendInt(dst, outputIndex)
}
