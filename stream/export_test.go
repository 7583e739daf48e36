package stream

// ParseChunkFastForTest is ParseChunk's fast path alone; it reports whether it took data.
func ParseChunkFastForTest(data []byte, c *Chunk) bool {
	c.reset()
	ok := parseChunkFast(data, c, nil, nil)
	if ok && len(c.StopReason) == 0 {
		c.StopReason = nil
	}
	return ok
}

// ParseChunkGeneralForTest is ParseChunk's general path alone.
func ParseChunkGeneralForTest(data []byte, c *Chunk) error {
	c.reset()
	return parseChunkGeneral(data, c, nil)
}

// The Emitter's steps and event types, which the server reaches only through a Converter,
// exported for the external tests that drive an Emitter alone.
var NewEmitter = newEmitter

func (e *Emitter) Start(dst []Event) []Event                  { return e.start(dst) }
func (e *Emitter) Apply(dst []Event, pieces ...Piece) []Event { return e.apply(dst, pieces...) }
func (e *Emitter) Fail(dst []Event, code, msg string, pieces ...Piece) []Event {
	return e.fail(dst, code, msg, pieces...)
}
func (e *Emitter) Complete(dst []Event, finishReason string, usage *Usage, pieces ...Piece) []Event {
	return e.complete(dst, finishReason, usage, pieces...)
}
func (e *Emitter) Ended() bool         { return e.ended }
func (e *Emitter) Ranges() []ItemRange { return e.ranges }
func (e *Emitter) Response() *Response { return e.snapshot() }

type (
	OutputItemEvent     = outputItemEvent
	ContentPartEvent    = contentPartEvent
	TextDeltaEvent      = textDeltaEvent
	TextDoneEvent       = textDoneEvent
	ArgumentsDeltaEvent = argumentsDeltaEvent
	ArgumentsDoneEvent  = argumentsDoneEvent
)

// ChunkPrefix is a ChunkReader's memory of its last chunk, for tests that parse chunk after
// chunk with it.
type ChunkPrefix = chunkPrefix

// ParseChunkFastAfterForTest is ParseChunkFastForTest remembering (and using) prefix.
func ParseChunkFastAfterForTest(data []byte, c *Chunk, prefix *ChunkPrefix) bool {
	c.reset()
	ok := parseChunkFast(data, c, nil, prefix)
	if ok && len(c.StopReason) == 0 {
		c.StopReason = nil
	}
	return ok
}
