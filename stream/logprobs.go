package stream

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// Logprobs (issue 18 item 4): vLLM reports, per generated token, its log probability and the most
// likely alternatives at that position; the Responses API reports them per token of the message
// text (output_text.logprobs and the output_text delta and done events). Reasoning and tool-call
// tokens get none. A Converter maps one onto the other with a [LogprobMapper].

// TokenLogprob is one generated token's logprob as the model server reported it.
type TokenLogprob struct {
	ID      uint32
	Logprob float64
	// Top are the most likely tokens at this position, as the server listed them (any order).
	Top []TopLogprob
}

// TopLogprob is one alternative at a position: a token id, or (Text set) a token the server
// named only by its text.
type TopLogprob struct {
	ID      uint32
	Text    string
	Logprob float64
}

// tokenIDPrefix is how vLLM spells a token with return_tokens_as_token_ids ("token_id:1234").
const tokenIDPrefix = "token_id:"

// appendTokenLogprobs reads a /v1/completions choice's logprobs object
// ({text_offset, token_logprobs, tokens, top_logprobs}) into dst, one element per token. ids are
// the choice's token_ids, used for tokens not written as "token_id:N" (nil when unknown).
func appendTokenLogprobs(dst []TokenLogprob, v gjson.Result, ids []uint32) []TokenLogprob {
	tokens := v.Get("tokens").Array()
	values := v.Get("token_logprobs").Array()
	tops := v.Get("top_logprobs").Array()
	for i, t := range tokens {
		var tl TokenLogprob
		if id, ok := parseTokenID(t.Str); ok {
			tl.ID = id
		} else if i < len(ids) {
			tl.ID = ids[i]
		}
		if i < len(values) {
			tl.Logprob = clampLogprob(values[i].Float())
		}
		if i < len(tops) && tops[i].IsObject() {
			tops[i].ForEach(func(k, lp gjson.Result) bool {
				alt := TopLogprob{Logprob: clampLogprob(lp.Float())}
				if id, ok := parseTokenID(k.Str); ok {
					alt.ID = id
				} else {
					alt.Text = strings.Clone(k.Str)
				}
				tl.Top = append(tl.Top, alt)
				return true
			})
		}
		dst = append(dst, tl)
	}
	return dst
}

func parseTokenID(s string) (uint32, bool) {
	rest, ok := strings.CutPrefix(s, tokenIDPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(rest, 10, 32)
	return uint32(n), err == nil
}

// clampLogprob maps -inf (and NaN) to -9999, as vLLM's OpenAI server writes them.
func clampLogprob(f float64) float64 {
	if math.IsNaN(f) || f < -9999 {
		return -9999
	}
	return f
}

// Logprob is one token of message text with its log probability (output_text.logprobs[i]).
type Logprob struct {
	// Token is the text this token contributed to the message: the tokens of a message
	// concatenate to its text. A token that only starts a character completed by the next one
	// contributes "".
	Token   string
	Logprob float64
	// Top are the most likely tokens at this position, most likely first (at most top_logprobs).
	Top []LogprobAlt
}

// LogprobAlt is one of Logprob.Top: a token's own text and log probability.
type LogprobAlt struct {
	Token   string
	Logprob float64
}

// appendLogprobs appends lps as a JSON array; withBytes adds each token's UTF-8 bytes (the
// content part's shape; the delta and done events have none).
func appendLogprobs(dst []byte, lps []Logprob, withBytes bool) []byte {
	dst = append(dst, '[')
	for i := range lps {
		if i > 0 {
			dst = append(dst, ',')
		}
		lp := &lps[i]
		dst = appendLogprobHead(dst, lp.Token, lp.Logprob, withBytes)
		dst = append(dst, `,"top_logprobs":[`...)
		for j := range lp.Top {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = appendLogprobHead(dst, lp.Top[j].Token, lp.Top[j].Logprob, withBytes)
			dst = append(dst, '}')
		}
		dst = append(dst, "]}"...)
	}
	return append(dst, ']')
}

// appendLogprobHead appends `{"token":…,("bytes":[…],)"logprob":…` (the object left open).
func appendLogprobHead(dst []byte, token string, lp float64, withBytes bool) []byte {
	dst = append(dst, `{"token":`...)
	dst = appendString(dst, token)
	if withBytes {
		dst = append(dst, `,"bytes":[`...)
		for i := 0; i < len(token); i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendUint(dst, uint64(token[i]), 10)
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"logprob":`...)
	// vLLM computes logprobs in float32: the shortest float32 spelling is exact and reads the
	// same whichever transport (JSON or protobuf float) carried it.
	return strconv.AppendFloat(dst, float64(float32(clampLogprob(lp))), 'g', -1, 32)
}

// LogprobOptions configures a [LogprobMapper].
type LogprobOptions struct {
	// TopN is the number of alternatives reported per token (top_logprobs, 0-20).
	TopN int
	// TokenText returns the text of one token id on its own (an alternative's token). Required.
	TokenText func(id uint32) string
}

// LogprobMapper attributes message text to the generated tokens that produced it. Give
// [LogprobMapper.Decoder] to the turn's output parser in place of its decoder, and the mapper to
// the Converter ([ConverterOptions.Logprobs]): the decoder records the text each token
// completed, and the Converter asks the mapper, for every message text delta, which tokens the
// delta's text came from.
//
// Parsers drop text (leading newlines, markers, a dropped call) but never invent message text,
// so a delta is matched, from its end backwards, against the text decoded since the previous
// delta: the delta that a token completes is where its text was decoded most recently. Text the
// match cannot place (a family that rewrites it) goes to the nearest matched token, so the
// tokens' strings always concatenate to the message text.
//
// A LogprobMapper serves one turn and is not safe for concurrent use.
type LogprobMapper struct {
	opts     LogprobOptions
	dec      TokenDecoder
	text     []byte         // every text the decoder returned, in order
	starts   []int          // starts[k]: offset in text where token k's text begins
	data     []TokenLogprob // data[k]: token k's logprob (ok[k] false when the server sent none)
	ok       []bool
	held     []bool // held[k]: token k was decoded and completed no text (a character's first bytes)
	cursor   int    // offset in text before which no delta may be placed
	floor    int    // the first token a delta may be placed on (after the last finished item)
	reported int    // the last token given a Logprob, -1 before any
	cur      int    // index of the token being appended
	alt      map[uint32]string
}

// NewLogprobMapper returns a mapper decoding with dec. It panics if dec or opts.TokenText is nil.
func NewLogprobMapper(dec TokenDecoder, opts LogprobOptions) *LogprobMapper {
	if dec == nil || opts.TokenText == nil {
		panic("stream: NewLogprobMapper without a decoder or TokenText")
	}
	return &LogprobMapper{opts: opts, dec: dec, reported: -1, cur: -1, alt: map[uint32]string{}}
}

// Decoder returns the recording decoder to give the output parser.
func (m *LogprobMapper) Decoder() TokenDecoder { return mapperDecoder{m} }

type mapperDecoder struct{ m *LogprobMapper }

func (d mapperDecoder) Next(id uint32) string {
	s := d.m.dec.Next(id)
	d.m.text = append(d.m.text, s...)
	if s == "" && d.m.cur >= 0 && d.m.cur < len(d.m.held) {
		d.m.held[d.m.cur] = true
	}
	return s
}

func (d mapperDecoder) Flush() string {
	s := d.m.dec.Flush()
	d.m.text = append(d.m.text, s...)
	return s
}

// begin starts token k (its logprob, when the server sent one): text decoded from now on is k's.
func (m *LogprobMapper) begin(k int, lp *TokenLogprob) {
	for len(m.starts) <= k {
		m.starts = append(m.starts, len(m.text))
		m.data = append(m.data, TokenLogprob{})
		m.ok = append(m.ok, false)
		m.held = append(m.held, false)
	}
	if lp != nil {
		m.data[k], m.ok[k] = *lp, true
	}
	m.cur = k
}

// tokenAt returns the token whose text holds offset off.
func (m *LogprobMapper) tokenAt(off int) int {
	k := sort.Search(len(m.starts), func(i int) bool { return m.starts[i] > off }) - 1
	return max(k, 0)
}

// skipTo moves the cursor to the start of token k's text (an item ended before token k).
func (m *LogprobMapper) skipTo(k int) {
	off := len(m.text)
	if k < len(m.starts) {
		off = m.starts[k]
	}
	m.cursor = max(m.cursor, off)
	m.floor = max(m.floor, k)
}

// maxLookback bounds, in bytes, how far before a delta's own length its text is looked for.
const maxLookback = 64 << 10

// span is a run of delta text placed on one token.
type span struct {
	tok        int
	start, end int // in the delta
}

// attribute places delta on tokens. It returns the Logprobs of the tokens first reached by this
// delta and the text at the delta's start that belongs to the token reported last (cont).
func (m *LogprobMapper) attribute(delta string) (lps []Logprob, cont string) {
	if len(m.starts) == 0 {
		m.begin(0, nil)
	}
	var spans []span // built backwards
	place := func(tok, start, end int) {
		if n := len(spans); n > 0 && spans[n-1].tok == tok && spans[n-1].start == end {
			spans[n-1].start = start
			return
		}
		spans = append(spans, span{tok: tok, start: start, end: end})
	}
	j := len(m.text)
	// A delta is text decoded lately: the match looks back no further than the delta's length
	// and maxLookback beyond it, so a family that rewrites its text costs linear time, not
	// quadratic.
	lo := max(m.cursor, len(m.text)-len(delta)-maxLookback)
	matchedEnd := -1
	i := len(delta)
	for i > 0 {
		r, size := utf8.DecodeLastRuneInString(delta[:i])
		found := -1
		for j > lo {
			r2, s2 := utf8.DecodeLastRune(m.text[lo:j])
			j -= s2
			if r2 == r && s2 == size {
				found = j
				break
			}
		}
		if found < 0 {
			break
		}
		if matchedEnd < 0 {
			matchedEnd = found + size
		}
		place(m.tokenAt(found), i-size, i)
		i -= size
	}
	if i > 0 { // text the match could not place: the nearest matched token, or the current one
		tok := m.cur
		if n := len(spans); n > 0 {
			tok = spans[n-1].tok
		}
		place(tok, 0, i)
	}
	low := max(m.firstAfter(m.cursor), m.floor) // no token before the cursor's is this delta's
	if matchedEnd >= 0 {
		m.cursor = matchedEnd
	}
	slices.Reverse(spans)
	for _, sp := range spans {
		s := delta[sp.start:sp.end]
		if sp.tok <= m.reported { // the rest of a token reported already
			if n := len(lps); n > 0 {
				lps[n-1].Token += s
			} else {
				cont += s
			}
			continue
		}
		// Tokens before it that were decoded but completed nothing started a character a later
		// one completed: they keep their place, with "" as their text. (Markers the parser
		// never decodes are not text.)
		for k := max(m.reported+1, low); k < sp.tok; k++ {
			if m.tokenLen(k) == 0 && m.held[k] {
				lps = append(lps, m.logprob(k, ""))
			}
		}
		lps = append(lps, m.logprob(sp.tok, s))
		m.reported = sp.tok
	}
	return lps, cont
}

// firstAfter returns the first token with text at or after offset off (the token holding off, or
// an empty token starting there).
func (m *LogprobMapper) firstAfter(off int) int {
	k := sort.Search(len(m.starts), func(i int) bool { return m.starts[i] >= off })
	if k > 0 && m.starts[k-1] < off && m.starts[k-1]+m.tokenLen(k-1) > off {
		k-- // off is inside token k-1
	}
	return k
}

func (m *LogprobMapper) tokenLen(k int) int {
	end := len(m.text)
	if k+1 < len(m.starts) {
		end = m.starts[k+1]
	}
	return end - m.starts[k]
}

// logprob renders token k with the text it contributed.
func (m *LogprobMapper) logprob(k int, token string) Logprob {
	lp := Logprob{Token: token}
	if k >= len(m.data) || !m.ok[k] {
		return lp // no logprob from the server (a prompt-forced id): 0, no alternatives
	}
	d := &m.data[k]
	lp.Logprob = d.Logprob
	if m.opts.TopN <= 0 || len(d.Top) == 0 {
		return lp
	}
	top := slices.Clone(d.Top)
	// Most likely first; vLLM lists the sampled token first, then the top N by rank, so a
	// sampled token outside the top N is one entry too many.
	sort.SliceStable(top, func(a, b int) bool { return top[a].Logprob > top[b].Logprob })
	lp.Top = make([]LogprobAlt, 0, min(len(top), m.opts.TopN))
	seen := map[uint32]bool{}
	for _, t := range top {
		if len(lp.Top) == m.opts.TopN {
			break
		}
		if t.Text == "" {
			if seen[t.ID] {
				continue
			}
			seen[t.ID] = true
		}
		lp.Top = append(lp.Top, LogprobAlt{Token: m.altText(t), Logprob: t.Logprob})
	}
	return lp
}

func (m *LogprobMapper) altText(t TopLogprob) string {
	if t.Text != "" {
		return t.Text
	}
	if s, ok := m.alt[t.ID]; ok {
		return s
	}
	s := m.opts.TokenText(t.ID)
	m.alt[t.ID] = s
	return s
}
