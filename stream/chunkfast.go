package stream

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/stitchllm/stitch/internal/jsonscan"

	"github.com/tidwall/gjson"
)

// parseChunkFast parses the shape vLLM's /v1/completions stream sends for every generated token
// (vllm/entrypoints/openai/protocol.py CompletionStreamResponse: an object with "id", "object",
// "created", "model", "choices" holding one choice, "usage" null) in one pass over data, without
// gjson's validate-then-walk passes. It reports false, leaving c to be overwritten, for anything
// else — another choice count, a usage or error object, nested values it does not expect, a key
// with escapes or seen twice — and ParseChunk then takes the general path. When it reports true,
// c is what the general path would have produced (FuzzParseChunkFast checks it). echo, when not
// nil, is the prompt echo the request expects (ChunkReader.ExpectPromptEcho).
func parseChunkFast(data []byte, c *Chunk, echo *promptEcho, prefix *chunkPrefix) bool {
	p := fastParser{b: data, echo: echo, prefix: prefix}
	var seen uint8
	resume := prefix != nil && len(prefix.b) > 0 && bytes.HasPrefix(data, prefix.b)
	if resume {
		p.i, seen, p.seen = len(prefix.b), prefix.seen, prefix.seen
	} else {
		p.ws()
		if !p.byte('{') {
			return false
		}
		p.ws()
		if p.peek() == '}' {
			p.i++
			return p.end()
		}
		if prefix != nil {
			p.textAt = -1 // record where the text value starts, if the chunk is one to record
		}
	}
	for {
		if resume {
			resume = false
			if !p.choicesFromText(c) {
				return false
			}
		} else if !p.member(c, &seen) {
			return false
		}
		end := p.done // the rest was the remembered tail
		if !end {
			p.ws()
			switch p.next() {
			case ',':
				p.ws()
				continue
			case '}':
				end = p.end()
			}
		}
		if end {
			if p.textAt > 0 {
				prefix.b = append(prefix.b[:0], data[:p.textAt]...)
				prefix.seen = p.textSeen
			}
			if p.midTo > 0 {
				prefix.mid = append(prefix.mid[:0], data[p.midFrom:p.midTo]...)
				prefix.midSeen = p.midSeen
			}
			if p.tailFrom > 0 && p.sets == p.tailSets {
				prefix.tail = chunkTail{b: append(prefix.tail.b[:0], data[p.tailFrom:]...), choiceSeen: p.tailSeen, topSeen: p.seen}
			}
			return true
		}
		return false
	}
}

// chunkPrefix is what a ChunkReader remembers of its last chunk so the next one, which vLLM
// writes with the same id, object, created, model and choice index, is not parsed again up to
// its text (issue 32): the bytes up to and including `"text":`, and the top level's seen keys
// there. parseChunkFast is a function of the bytes it has read so far, and none of the members
// before the text sets a Chunk field (it records only then), so a chunk starting with these
// bytes is parsed from there exactly as from its start.
//
// mid does the same for what follows the text up to and including `"token_ids":` (vLLM's
// "logprobs":null,"finish_reason":null,"stop_reason":null while generating), when none of it set
// a Chunk field; midSeen is the choice's seen keys there. The choice's state after a text read
// from prefix's end is always the same (only the text seen), so mid is valid after any such text.
//
// tail is the rest of a chunk after its token ids, when it set no Chunk field (vLLM's
// ,"prompt_token_ids":null}],"usage":null} after the first chunk): a chunk whose ids are
// followed by the same bytes, with the same keys seen in the choice and at the top level, ends
// there as that one did.
type chunkPrefix struct {
	b       []byte
	seen    uint8
	mid     []byte
	midSeen uint8
	tail    chunkTail
}

// chunkTail is a chunkPrefix's tail and the seen keys it was read with.
type chunkTail struct {
	b          []byte
	choiceSeen uint8
	topSeen    uint8
}

// member reads one top-level member into c; seen holds the keys read so far that must be unique.
func (p *fastParser) member(c *Chunk, seen *uint8) bool {
	key, ok := p.key()
	if !ok {
		return false
	}
	var bit uint8
	switch key {
	case "choices":
		bit = 1
	case "usage":
		bit = 2
	case "object":
		bit = 4
	case "error":
		return false
	}
	if bit != 0 {
		if *seen&bit != 0 {
			return false
		}
		*seen |= bit
	}
	switch key {
	case "choices":
		p.seen = *seen
		return p.choices(c)
	case "usage":
		return p.literal("null")
	case "object":
		s, ok := p.plainString()
		return ok && s != "error"
	}
	return p.scalar()
}

// fastParser is parseChunkFast's cursor over the chunk.
type fastParser struct {
	b    []byte
	i    int
	echo *promptEcho
	// textAt, when recording (-1 until found), is where the one choice's text value starts if
	// only members that set nothing came before it in the choice; textSeen is the top level's
	// seen keys then, and seen the top level's seen keys while the choices are read.
	textAt   int
	textSeen uint8
	seen     uint8
	// prefix is the ChunkReader's memory (nil: none). midFrom is where the members after the
	// text at its end start, when this chunk has that text and no remembered mid matched; sets
	// counts the Chunk fields set, and midSets is sets then. midTo and midSeen are where
	// `"token_ids":` ends when nothing was set before it since midFrom, and the choice's seen
	// keys then.
	prefix  *chunkPrefix
	midFrom int
	midSets int
	sets    int
	midTo   int
	midSeen uint8
	// tailFrom is where the members after the token ids start, tailSets and tailSeen sets and
	// the choice's seen keys there (chunkPrefix.tail); done: the tail matched, the chunk is read.
	tailFrom int
	tailSets int
	tailSeen uint8
	done     bool
}

func (p *fastParser) ws() {
	for p.i < len(p.b) && isSpace(p.b[p.i]) {
		p.i++
	}
}

func (p *fastParser) peek() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func (p *fastParser) next() byte {
	if p.i < len(p.b) {
		p.i++
		return p.b[p.i-1]
	}
	return 0
}

func (p *fastParser) byte(c byte) bool {
	if p.peek() == c {
		p.i++
		return true
	}
	return false
}

// end reports whether only whitespace follows.
func (p *fastParser) end() bool {
	p.ws()
	return p.i == len(p.b)
}

// key reads `"name"` and the colon after it; names with escapes are not taken.
func (p *fastParser) key() (string, bool) {
	s, ok := p.plainString()
	if !ok {
		return "", false
	}
	p.ws()
	if !p.byte(':') {
		return "", false
	}
	p.ws()
	return s, true
}

// plainString reads a string without escapes or control characters, returning its bytes as a view
// of the input (valid until the input changes).
func (p *fastParser) plainString() (string, bool) {
	if !p.byte('"') {
		return "", false
	}
	start := p.i
	p.skipPlain()
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c == '"':
			s := unsafeString(p.b[start:p.i])
			p.i++
			return s, true
		case c == '\\' || c < 0x20:
			return "", false
		}
		p.i++
	}
	return "", false
}

// str reads a string value that may hold escapes, returning its raw JSON (quotes included).
func (p *fastParser) str() (raw []byte, escaped, ok bool) {
	start := p.i
	if !p.byte('"') {
		return nil, false, false
	}
	for p.i < len(p.b) {
		p.skipPlain()
		if p.i == len(p.b) {
			break
		}
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return p.b[start:p.i], escaped, true
		case c < 0x20:
			return nil, false, false
		case c == '\\':
			escaped = true
			p.i++
			switch p.peek() {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i++
			case 'u':
				p.i++
				for range 4 {
					if !isHex(p.peek()) {
						return nil, false, false
					}
					p.i++
				}
			default:
				return nil, false, false
			}
			continue
		}
		p.i++
	}
	return nil, false, false
}

// skipPlain moves p.i over string bytes that need no attention (not '"', '\\' or a control
// character) eight at a time, stopping at the first that does: the byte loops after it see the
// same bytes from there, so it changes what they cost, not what they take.
func (p *fastParser) skipPlain() {
	p.i = jsonscan.NextStringSpecial(p.b, p.i)
}

func (p *fastParser) literal(lit string) bool {
	if len(p.b)-p.i >= len(lit) && string(p.b[p.i:p.i+len(lit)]) == lit {
		p.i += len(lit)
		return true
	}
	return false
}

// number reads a JSON number (RFC 8259 grammar).
func (p *fastParser) number() bool {
	p.byte('-')
	switch {
	case p.byte('0'):
	case isDigit(p.peek()) && p.peek() != '0':
		for isDigit(p.peek()) {
			p.i++
		}
	default:
		return false
	}
	if p.byte('.') {
		if !isDigit(p.peek()) {
			return false
		}
		for isDigit(p.peek()) {
			p.i++
		}
	}
	if c := p.peek(); c == 'e' || c == 'E' {
		p.i++
		if c := p.peek(); c == '+' || c == '-' {
			p.i++
		}
		if !isDigit(p.peek()) {
			return false
		}
		for isDigit(p.peek()) {
			p.i++
		}
	}
	return true
}

// scalar skips a string, number, true, false or null.
func (p *fastParser) scalar() bool {
	switch c := p.peek(); {
	case c == '"':
		_, _, ok := p.str()
		return ok
	case c == '-' || isDigit(c):
		return p.number()
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	}
	return false
}

// choices reads `[]` or `[{…}]` (one choice).
func (p *fastParser) choices(c *Chunk) bool {
	if !p.byte('[') {
		return false
	}
	p.ws()
	if p.byte(']') {
		return true
	}
	if !p.choice(c, false) {
		return false
	}
	if p.done {
		return true
	}
	p.ws()
	return p.byte(']')
}

// choicesFromText reads the rest of `[{…}]` from the choice's text value on (a chunkPrefix's end).
func (p *fastParser) choicesFromText(c *Chunk) bool {
	p.ws()
	if !p.choice(c, true) {
		return false
	}
	if p.done {
		return true
	}
	p.ws()
	return p.byte(']')
}

// choice reads one choice object into c; fromText: from its text value on, with no member
// before it that set anything (chunkPrefix).
func (p *fastParser) choice(c *Chunk, fromText bool) bool {
	if !fromText {
		if !p.byte('{') {
			return false
		}
		p.ws()
		if p.byte('}') {
			return true
		}
	}
	var seen uint8
	atText := false // this member is the text at chunkPrefix's end
	next := ""      // the key already read (chunkPrefix), if any
	if fromText {
		next = "text"
	}
	for {
		key := next
		if next != "" {
			atText, next = key == "text", ""
		} else {
			var ok bool
			if key, ok = p.key(); !ok {
				return false
			}
			atText = false
			if key == "text" && seen == 0 && p.textAt < 0 {
				p.textAt, p.textSeen = p.i, p.seen
				atText = true
			}
			if key == "token_ids" && p.midFrom > 0 && p.sets == p.midSets {
				p.midTo, p.midSeen = p.i, seen
			}
		}
		var bit uint8
		switch key {
		case "text":
			bit = 1
		case "finish_reason":
			bit = 2
		case "stop_reason":
			bit = 4
		case "token_ids":
			bit = 8
		case "prompt_token_ids":
			bit = 16
		}
		if bit != 0 {
			if seen&bit != 0 {
				return false
			}
			seen |= bit
		}
		switch key {
		case "text":
			switch p.peek() {
			case '"':
				raw, escaped, ok := p.str()
				if !ok {
					return false
				}
				if escaped {
					text := gjson.ParseBytes(raw).Str
					c.setText(unsafe.Slice(unsafe.StringData(text), len(text)))
				} else {
					c.setText(raw[1 : len(raw)-1])
				}
			default:
				// gjson's String() of a non-string: not what vLLM sends.
				return false
			}
			if atText && p.prefix != nil {
				if mid := p.prefix.mid; len(mid) > 0 && bytes.HasPrefix(p.b[p.i:], mid) {
					p.i += len(mid)
					p.ws() // as key() does after the colon
					seen, next = p.prefix.midSeen, "token_ids"
					continue
				}
				p.midFrom, p.midSets = p.i, p.sets
			}
		case "finish_reason":
			switch p.peek() {
			case '"':
				s, ok := p.plainString()
				if !ok {
					return false
				}
				c.FinishReason = finishReason(s)
				p.sets++
			default:
				if !p.literal("null") {
					return false
				}
			}
		case "stop_reason":
			start := p.i
			if !p.scalar() {
				return false
			}
			if raw := p.b[start:p.i]; string(raw) != "null" {
				c.StopReason = append(c.StopReason, raw...)
				p.sets++
			}
		case "token_ids":
			p.sets++
			if p.peek() == '[' {
				if _, ok := p.ids(&c.TokenIDs); !ok {
					return false
				}
			} else if !p.literal("null") {
				return false
			}
			if p.prefix != nil {
				if t := &p.prefix.tail; len(t.b) > 0 && seen == t.choiceSeen && p.seen == t.topSeen &&
					string(p.b[p.i:]) == string(t.b) {
					p.i, p.done = len(p.b), true
					return true
				}
				p.tailFrom, p.tailSets, p.tailSeen = p.i, p.sets, seen
			}
		case "prompt_token_ids":
			// The prompt echo (up to the whole 100k-id prompt, first chunk only) is never decoded
			// into a slice: stitch sent these ids and only needs their number
			// (Chunk.PromptTokens). Copying them was most of a turn's stream CPU (issue 32). When
			// the request's encoding is known, the echo is compared with it (memequal); otherwise,
			// or when it differs, it is validated and counted in place.
			c.PromptTokens = 0 // a no-op for null: an earlier prompt_token_ids is refused
			switch {
			case p.peek() != '[':
				if !p.literal("null") {
					return false
				}
			case p.echo != nil && p.echo.prefixOf(p.b[p.i:]):
				p.sets++
				p.i += p.echo.size
				c.PromptTokens = p.echo.ids
			default:
				p.sets++
				c.PromptEchoDiffers = p.echo != nil
				n, ok := p.ids(nil)
				if !ok {
					return false
				}
				c.PromptTokens = n
			}
		default:
			if !p.scalar() {
				return false
			}
		}
		p.ws()
		switch p.next() {
		case ',':
			p.ws()
			continue
		case '}':
			return true
		}
		return false
	}
}

// ids reads an array of non-negative integers below 2³² written plainly (no sign, fraction or
// exponent), appending them to dst, or only counting them when dst is nil; it returns how many
// the array held. Whatever dst, it takes and refuses the same input.
func (p *fastParser) ids(dst *[]uint32) (int, bool) {
	p.i++ // '['
	p.ws()
	if p.byte(']') {
		return 0, true
	}
	b, i := p.b, p.i
	if dst == nil {
		if n, end, ok := countCompactIDs(b, i); ok {
			p.i = end
			return n, true
		}
	}
	count := 0
	for {
		// One id: 1–10 digits, no leading zero, at most 2³²-1.
		start := i
		for i < len(b) && isDigit(b[i]) {
			i++
		}
		digits := i - start
		if digits == 0 || digits > 10 || (digits > 1 && b[start] == '0') ||
			(digits == 10 && string(b[start:i]) > "4294967295") {
			return 0, false
		}
		count++
		if dst != nil {
			var n uint32
			for _, d := range b[start:i] {
				n = n*10 + uint32(d-'0')
			}
			*dst = append(*dst, n)
		}
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i == len(b) {
			return 0, false
		}
		c := b[i]
		i++
		switch c {
		case ',':
			for i < len(b) && isSpace(b[i]) {
				i++
			}
			continue
		case ']':
			p.i = i
			return count, true
		}
		return 0, false
	}
}

// SWAR constants: a byte's high bit in each lane, and each lane's low seven bits.
const (
	laneHigh = 0x8080808080808080
	laneLow  = 0x7f7f7f7f7f7f7f7f
)

// countCompactIDs counts the ids of an array written as vLLM writes the prompt echo, digits and
// single commas up to ']' with no whitespace, starting at b[i] (just after '['): the count and
// the index after ']'. It checks eight bytes at a time that they are digits or commas and then
// each id between two commas (1–10 digits, no leading zero, at most 2³²-1), so the 100k-id echo
// costs a few bytes' work per id instead of a branch per byte. ok is false for anything else
// (whitespace, a bad id, the end of b): the caller's byte loop then reads the array from i and
// takes or refuses it, so this only ever agrees with that loop (FuzzIDsCount).
func countCompactIDs(b []byte, i int) (count, end int, ok bool) {
	start := i // where the current id starts
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		x := w ^ 0x2c2c2c2c2c2c2c2c // ',' lanes become zero
		commas := ^(((x & laneLow) + laneLow) | x) & laneHigh
		d := w ^ 0x3030303030303030 // '0'..'9' lanes become 0..9
		digits := ^(((d & laneLow) + 0x7676767676767676) | d) & laneHigh
		if commas|digits != laneHigh {
			break // ']', whitespace or anything else: the bytes below
		}
		for commas != 0 {
			at := i + bits.TrailingZeros64(commas)/8
			if !compactID(b[start:at]) {
				return 0, 0, false
			}
			count++
			start = at + 1
			commas &= commas - 1
		}
	}
	for ; i < len(b); i++ {
		switch c := b[i]; {
		case isDigit(c):
		case c == ',' || c == ']':
			if !compactID(b[start:i]) {
				return 0, 0, false
			}
			count++
			if c == ']' {
				return count, i + 1, true
			}
			start = i + 1
		default:
			return 0, 0, false
		}
	}
	return 0, 0, false
}

// compactID reports whether the digits of one id are 1–10 long, without a leading zero and at
// most 2³²-1 (the caller checked they are digits).
func compactID(id []byte) bool {
	switch n := len(id); {
	case n == 0 || n > 10:
		return false
	case n > 1 && id[0] == '0':
		return false
	case n == 10:
		return string(id) <= "4294967295"
	}
	return true
}
