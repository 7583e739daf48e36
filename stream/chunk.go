package stream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/internal/jsonlimit"
)

// Usage is vLLM's token accounting from the final `"choices":[]` chunk
// (stream_options.include_usage).
type Usage struct {
	PromptTokens     int // prompt length in tokens
	CompletionTokens int // generated tokens, including a final stop token
	// CachedTokens is usage.prompt_tokens_details.cached_tokens: prompt tokens
	// served from the prefix cache. vLLM sends it only with
	// --enable-prompt-tokens-details; 0 when absent.
	CachedTokens int
}

// Chunk is one vLLM /v1/completions stream chunk (choice 0 only: stitch never
// asks for n > 1).
//
// A Chunk read by [ParseChunk] into a reused value keeps its slices' capacity
// across calls: TokenIDs is overwritten by the next parse.
type Chunk struct {
	// TokenIDs are the ids generated since the previous chunk (return_token_ids);
	// a chunk may carry several, and the last one includes the EOS/stop id.
	TokenIDs []uint32
	// PromptTokens is the length of the prompt echo (prompt_token_ids, which vLLM sends in the
	// first chunk only). The ids are never copied: stitch sent them and never reads them back (a
	// 100k-token prompt would be a 400 KB copy per turn). When the ChunkReader was told the array
	// the request sent (ExpectPromptEcho), the echo is compared with it and PromptTokens is the
	// sent count; otherwise, or when they differ, the echo is validated and counted.
	PromptTokens int
	// PromptEchoDiffers reports that prompt_token_ids was not, byte for byte, the array the
	// ChunkReader was told the request sent: vLLM ran a prompt other than stitch's, or wrote the
	// echo some other way. PromptTokens was then counted from the echo itself.
	PromptEchoDiffers bool
	// Text is vLLM's detokenized text for TokenIDs (informational: stitch
	// decodes ids itself).
	Text string
	// FinishReason is "" while generating, then "stop", "length", "abort" or "error".
	FinishReason string
	// StopReason is the raw JSON stop_reason (a stop string, a token id, or
	// null); nil when absent or null.
	StopReason json.RawMessage
	// Usage is set on the usage chunk (empty choices), nil otherwise.
	Usage *Usage
	// Err is set when the chunk is an in-stream error; other fields are empty.
	Err *UpstreamError
	// Logprobs are the logprobs of TokenIDs, one each, when the request asked for them
	// (choices[0].logprobs); nil otherwise.
	Logprobs []TokenLogprob

	usage Usage // storage for Usage, to avoid an allocation per parse
	// textArena holds the bytes of the Text values parsed into this Chunk, appended one after
	// another, so a token's text costs no allocation of its own (issue 32). Bytes once handed
	// out as a Text are never written again (a full arena is replaced, not reused), so a Text
	// kept past the next parse stays what it was, as a copy would.
	textArena []byte
}

// textArenaSize is the smallest arena block: some thousand tokens' text per allocation.
const textArenaSize = 4 << 10

// setText sets c.Text to a copy of b, cut from c's text arena.
func (c *Chunk) setText(b []byte) {
	if len(b) == 0 {
		c.Text = ""
		return
	}
	if cap(c.textArena)-len(c.textArena) < len(b) {
		c.textArena = make([]byte, 0, max(textArenaSize, len(b)))
	}
	start := len(c.textArena)
	c.textArena = append(c.textArena, b...)
	c.Text = unsafeString(c.textArena[start:len(c.textArena):len(c.textArena)])
}

// reset clears c for reuse, keeping slice capacity.
func (c *Chunk) reset() {
	c.TokenIDs = c.TokenIDs[:0]
	c.PromptTokens = 0
	c.PromptEchoDiffers = false
	c.Text = ""
	c.FinishReason = ""
	c.StopReason = c.StopReason[:0]
	c.Usage = nil
	c.Err = nil
	c.Logprobs = c.Logprobs[:0]
}

// unsafeString views b as a string without copying; the string must not
// outlive b's next modification. gjson results built from it alias b.
func unsafeString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// ParseChunk parses one event's data (a JSON object) into c, reusing c's
// slices. It does not retain data. A data value of `[DONE]` is not a chunk:
// callers check for it first (ChunkReader does).
func ParseChunk(data []byte, c *Chunk) error { return parseChunk(data, c, nil, nil) }

// parseChunk is ParseChunk with the prompt echo the request expects (nil: none told).
// prefix, when not nil, is the ChunkReader's memory of its last chunk (chunkPrefix).
func parseChunk(data []byte, c *Chunk, echo *promptEcho, prefix *chunkPrefix) error {
	c.reset()
	if parseChunkFast(data, c, echo, prefix) {
		if len(c.StopReason) == 0 {
			c.StopReason = nil
		}
		return nil
	}
	c.reset()
	return parseChunkGeneral(data, c, echo)
}

// parseChunkGeneral is ParseChunk for any chunk: validate, then walk with gjson.
func parseChunkGeneral(data []byte, c *Chunk, echo *promptEcho) error {
	s := unsafeString(data)
	// gjson's validator recurses once per nesting level: bound the depth first (issue 14).
	if err := jsonlimit.CheckDepth(data, jsonlimit.DefaultMaxDepth); err != nil {
		return fmt.Errorf("%w: %w", ErrBadChunk, err)
	}
	if !gjson.Valid(s) {
		return fmt.Errorf("%w: %.80q", ErrBadChunk, data)
	}
	root := gjson.Parse(s)
	if !root.IsObject() {
		return fmt.Errorf("%w: not an object: %.80q", ErrBadChunk, data)
	}
	// One pass over the top-level members (gjson Get would rescan per key).
	var choices, usage, errObj gjson.Result
	isErrorObject := false
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "choices":
			choices = v
		case "usage":
			usage = v
		case "error":
			errObj = v
		case "object":
			isErrorObject = v.Str == "error"
		}
		return true
	})
	if errObj.Exists() && errObj.Type != gjson.Null {
		c.Err = upstreamError(errObj)
		return nil
	}
	if isErrorObject {
		c.Err = upstreamError(root)
		return nil
	}
	if choices.IsArray() {
		choices.ForEach(func(_, ch gjson.Result) bool {
			c.parseChoice(ch, echo)
			return false // choice 0 only
		})
	}
	if len(c.StopReason) == 0 {
		c.StopReason = nil
	}
	if usage.IsObject() {
		c.usage = Usage{}
		usage.ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "prompt_tokens":
				c.usage.PromptTokens = int(v.Int())
			case "completion_tokens":
				c.usage.CompletionTokens = int(v.Int())
			case "prompt_tokens_details":
				c.usage.CachedTokens = int(v.Get("cached_tokens").Int())
			}
			return true
		})
		c.Usage = &c.usage
	}
	return nil
}

func (c *Chunk) parseChoice(ch gjson.Result, echo *promptEcho) {
	var logprobs gjson.Result
	defer func() {
		if logprobs.IsObject() { // after token_ids, wherever the key came
			c.Logprobs = appendTokenLogprobs(c.Logprobs[:0], logprobs, c.TokenIDs)
		}
	}()
	ch.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "text":
			c.Text = strings.Clone(v.String()) // detach from data
		case "finish_reason":
			if v.Type == gjson.String {
				c.FinishReason = finishReason(v.Str)
			}
		case "stop_reason":
			if v.Type != gjson.Null {
				c.StopReason = append(c.StopReason, v.Raw...)
			}
		case "token_ids":
			c.TokenIDs = appendIDs(c.TokenIDs, v)
		case "prompt_token_ids":
			if echo != nil && v.IsArray() {
				if echo.equal(v.Raw) {
					c.PromptTokens = echo.ids
					break
				}
				c.PromptEchoDiffers = true
			}
			c.PromptTokens = countIDs(v)
		case "logprobs":
			logprobs = v
		}
		return true
	})
}

// finishReason returns a constant string for the known reasons (no allocation
// and no aliasing of the parsed data).
func finishReason(s string) string {
	switch s {
	case FinishStop:
		return FinishStop
	case FinishLength:
		return FinishLength
	case FinishAbort:
		return FinishAbort
	case FinishError:
		return FinishError
	}
	return strings.Clone(s)
}

// vLLM finish reasons.
const (
	FinishStop   = "stop"   // EOS, a stop token id or a stop string
	FinishLength = "length" // max_tokens or the context length was reached
	FinishAbort  = "abort"  // the request was aborted upstream
	FinishError  = "error"  // the engine failed while generating
)

// appendIDs appends the ids of a JSON array of non-negative integers,
// parsing the raw text directly (the first chunk echoes the whole prompt).
// Elements that are not plain integers fall back to gjson's conversion.
func appendIDs(dst []uint32, v gjson.Result) []uint32 {
	raw := v.Raw
	if len(raw) < 2 || raw[0] != '[' {
		return dst
	}
	base := len(dst)
	var n uint64
	digits := false
	for i := 1; i < len(raw); i++ {
		c := raw[i]
		switch {
		case '0' <= c && c <= '9':
			n = n*10 + uint64(c-'0')
			digits = true
		case c == ',' || c == ']':
			if digits {
				dst = append(dst, uint32(n))
			}
			n, digits = 0, false
		case c == ' ' || c == '\n' || c == '\t' || c == '\r':
		default:
			return appendIDsSlow(dst[:base], v)
		}
	}
	return dst
}

// countIDs returns the number of elements of a JSON array of ids (0 for anything else) without
// decoding them.
func countIDs(v gjson.Result) int {
	raw := v.Raw
	if len(raw) < 2 || raw[0] != '[' {
		return 0
	}
	n := strings.Count(raw, ",")
	if n == 0 && strings.TrimSpace(raw[1:len(raw)-1]) == "" {
		return 0
	}
	return n + 1
}

func appendIDsSlow(dst []uint32, v gjson.Result) []uint32 {
	v.ForEach(func(_, id gjson.Result) bool {
		dst = append(dst, uint32(id.Uint()))
		return true
	})
	return dst
}

func upstreamError(e gjson.Result) *UpstreamError {
	ue := &UpstreamError{
		Message: e.Get("message").String(),
		Type:    e.Get("type").String(),
		Param:   e.Get("param").String(),
	}
	if code := e.Get("code"); code.Type == gjson.Number {
		ue.Code = int(code.Int())
	}
	if ue.Message == "" && e.Type == gjson.String {
		ue.Message = e.Str
	}
	// Detach from the parsed buffer.
	ue.Message = strings.Clone(ue.Message)
	ue.Type = strings.Clone(ue.Type)
	ue.Param = strings.Clone(ue.Param)
	return ue
}

// promptEcho is the prompt_token_ids array a request's first chunk should carry: ids ids, whose
// compact JSON between the brackets is the concatenation of parts (the request's own encoding).
type promptEcho struct {
	ids   int
	parts [][]byte
	size  int // the array's length in bytes, brackets included
}

// prefixOf reports whether b starts with the expected array.
func (e *promptEcho) prefixOf(b []byte) bool {
	if len(b) < e.size || b[0] != '[' || b[e.size-1] != ']' {
		return false
	}
	at := 1
	for _, p := range e.parts {
		if !bytes.Equal(b[at:at+len(p)], p) {
			return false
		}
		at += len(p)
	}
	return true
}

// equal reports whether raw is the expected array.
func (e *promptEcho) equal(raw string) bool {
	return len(raw) == e.size && e.prefixOf(unsafe.Slice(unsafe.StringData(raw), len(raw)))
}

// ChunkReader reads vLLM completion chunks from an SSE body.
// It is not safe for concurrent use.
type ChunkReader struct {
	dec    *Decoder
	chunk  Chunk
	echo   *promptEcho
	prefix chunkPrefix // the last chunk's bytes up to its text (parseChunkFast)
	done   bool
}

// NewChunkReader returns a ChunkReader over an upstream response body.
func NewChunkReader(r io.Reader) *ChunkReader {
	return &ChunkReader{dec: NewDecoder(r)}
}

// UseBuffers makes r take its read buffer from pool and give it back on Release. Call it before
// the first Next.
func (r *ChunkReader) UseBuffers(pool *BufferPool) { r.dec.Buffers = pool }

// Release gives the read buffer back to the pool (UseBuffers). Call it once the stream is done,
// however it ended (error, cancellation, client gone); nothing read from r may alias the
// buffer by then: the Chunk's slices and strings are its own (Text, StopReason, TokenIDs,
// Logprobs and Err are copied out of the SSE data). Next then fails; a second Release does
// nothing.
func (r *ChunkReader) Release() { r.dec.Release() }

// echoRoom is what the first chunk holds besides its prompt echo (id, model, the first token's
// text, ids and logprobs), with margin.
const echoRoom = 4 << 10

// ExpectPromptEcho tells r, before the first read, that the first chunk echoes the n prompt ids
// the request sent, and array, when given, the request's own encoding of them: the compact JSON
// between the brackets, in the pieces the request was written from (they are not copied and must
// not change while r reads).
//
// vLLM echoes the prompt as prompt_token_ids in the first chunk of each choice
// (vllm/entrypoints/openai/serving_completion.py, completion_stream_generator: has_echoed), and
// writes the chunk with pydantic's compact JSON (chunk.model_dump_json(exclude_unset=False)):
// ids separated by single commas, as stitch's request writes them (upstream.CompletionRequest).
// So the echo is checked, not counted: when it is byte for byte `[` array `]`, PromptTokens is
// n without reading the ids (a memequal of ~700 KB for a 100k-id prompt, instead of validating
// each id). When it differs (other formatting, or vLLM ran another prompt), it is validated and
// counted as without array, and the Chunk reports PromptEchoDiffers. With no array, the echo is
// counted.
//
// It also sizes the buffer the first chunk is read into: the echo (7 bytes an id for
// vocabularies under a million when array is not given), echoRoom and a read's room, so a
// 100k-id echo is read into one buffer instead of one grown by doubling from 32 KiB, copying each
// time (issue 32). A larger chunk still grows it; n ≤ 0 changes nothing.
func (r *ChunkReader) ExpectPromptEcho(n int, array ...[]byte) {
	if n <= 0 {
		return
	}
	size := 7 * n
	if len(array) > 0 {
		e := &promptEcho{ids: n, parts: array, size: 2}
		for _, p := range array {
			e.size += len(p)
		}
		r.echo, size = e, e.size
	}
	r.dec.reserve(len("data: ") + size + echoRoom + readSize)
}

// Next returns the next chunk. The *Chunk is reused: it is valid until the next
// call. After `data: [DONE]` Next returns io.EOF; if the body ends before it,
// Next returns ErrTruncated. A chunk carrying an upstream error is returned with
// Err set and a nil error (the caller decides; usually response.failed).
func (r *ChunkReader) Next() (*Chunk, error) {
	if r.done {
		return nil, io.EOF
	}
	for {
		m, err := r.dec.Next()
		if err == io.EOF {
			return nil, ErrTruncated
		}
		if err != nil {
			return nil, fmt.Errorf("read upstream stream: %w", err)
		}
		data := bytes.TrimSpace(m.Data)
		if len(data) == 0 {
			continue
		}
		if string(data) == "[DONE]" {
			r.done = true
			return nil, io.EOF
		}
		if err := parseChunk(data, &r.chunk, r.echo, &r.prefix); err != nil {
			return nil, err
		}
		return &r.chunk, nil
	}
}
