package store

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/stitchllm/stitch/internal/jsonappend"
)

// A checkpoint record is written and read on every turn and holds the whole conversation as item
// ids (checkpointRecord.Conversation), so encoding/json's reflection over it cost a long
// conversation's turn about as much as the rest of its persistence. appendCheckpointRecord and
// parseCheckpointRecord do the same work directly: the bytes written are encoding/json's (a
// record it would encode differently, such as one holding invalid UTF-8, is left to it), and a
// record read is either parsed in the layout written here, with values that layout cannot hold
// decoded by encoding/json one field at a time, or, for anything else, by json.Unmarshal whole, so
// that what is accepted, rejected and returned stays json.Unmarshal's.

// appendCheckpointRecord appends the JSON encoding/json gives r (with HTML escaping off), and
// reports false, having appended nothing, where it leaves r to encoding/json: a string that is not
// valid UTF-8, a time outside the years 0-9999, a raw value that is not valid JSON.
func appendCheckpointRecord(dst []byte, r *checkpointRecord) ([]byte, bool) {
	start := len(dst)
	fail := func() ([]byte, bool) { return dst[:start], false }
	y := r.CreatedAt.Year()
	if y < 0 || y > 9999 || !utf8.ValidString(r.ID) || !utf8.ValidString(r.Tenant) || !utf8.ValidString(r.PreviousID) ||
		!utf8.ValidString(r.Model) || !utf8.ValidString(r.Status) || !utf8.ValidString(r.Instructions) || !utf8.ValidString(r.Fingerprint) {
		return fail()
	}
	for _, list := range [][]string{r.Input, r.Output, r.Conversation} {
		for _, s := range list {
			if !utf8.ValidString(s) {
				return fail()
			}
		}
	}
	for k, v := range r.Notes {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return fail()
		}
	}
	dst = append(dst, `{"v":`...)
	dst = strconv.AppendInt(dst, int64(r.V), 10)
	dst = appendMember(dst, "id", r.ID)
	dst = appendMember(dst, "tenant", r.Tenant)
	dst = appendMemberOmit(dst, "prev", r.PreviousID)
	dst = appendMemberOmit(dst, "model", r.Model)
	dst = appendMemberOmit(dst, "status", r.Status)
	dst = append(dst, `,"created_at":"`...)
	dst = r.CreatedAt.AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, '"')
	dst = appendStrings(dst, "input", r.Input)
	dst = appendStrings(dst, "output", r.Output)
	dst = appendStrings(dst, "conversation", r.Conversation)
	dst = appendMemberOmit(dst, "instructions", r.Instructions)
	var ok bool
	if dst, ok = appendRawMember(dst, "response", r.Response); !ok {
		return fail()
	}
	if dst, ok = appendRawMember(dst, "request", r.Request); !ok {
		return fail()
	}
	if r.Mode != 0 {
		dst = append(dst, `,"mode":`...)
		dst = strconv.AppendUint(dst, uint64(r.Mode), 10)
	}
	dst = appendMemberOmit(dst, "fp", r.Fingerprint)
	if r.PromptLen != 0 {
		dst = append(dst, `,"prompt_len":`...)
		dst = strconv.AppendInt(dst, int64(r.PromptLen), 10)
	}
	dst = appendBytesMember(dst, "generated", r.Generated)
	dst = appendBytesMember(dst, "suffix", r.Suffix)
	if len(r.Notes) > 0 {
		// encoding/json writes a map's members in key order.
		dst = append(dst, `,"notes":{`...)
		for i, k := range sortedStringKeys(r.Notes) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonappend.StringJS(dst, k)
			dst = append(dst, ':')
			dst = jsonappend.StringJS(dst, r.Notes[k])
		}
		dst = append(dst, '}')
	}
	return append(dst, '}'), true
}

// appendKey appends ,"name": (name is one of the record's own member names: nothing to escape).
func appendKey(dst []byte, name string) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, name...)
	return append(dst, '"', ':')
}

// appendMember appends ,"name":s (s valid UTF-8: jsonappend.StringJS then writes what encoding/json
// does).
func appendMember(dst []byte, name, s string) []byte {
	return jsonappend.StringJS(appendKey(dst, name), s)
}

// appendMemberOmit is appendMember for an omitempty string: nothing when s is empty.
func appendMemberOmit(dst []byte, name, s string) []byte {
	if s == "" {
		return dst
	}
	return appendMember(dst, name, s)
}

// appendStrings appends an omitempty []string member.
func appendStrings(dst []byte, name string, list []string) []byte {
	if len(list) == 0 {
		return dst
	}
	dst = append(appendKey(dst, name), '[')
	for i, s := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonappend.StringJS(dst, s)
	}
	return append(dst, ']')
}

// appendRawMember appends an omitempty json.RawMessage member compacted, as encoding/json does;
// false when raw is not valid JSON.
func appendRawMember(dst []byte, name string, raw json.RawMessage) ([]byte, bool) {
	if len(raw) == 0 {
		return dst, true
	}
	dst = appendKey(dst, name)
	if validJSON(raw) && !spaceOutsideStrings(raw) { // compact already: json.Compact would copy it as it is
		return append(dst, raw...), true
	}
	buf := bytes.NewBuffer(dst)
	if err := json.Compact(buf, raw); err != nil {
		return dst, false
	}
	return buf.Bytes(), true
}

// spaceOutsideStrings reports whether raw, valid JSON, holds whitespace between its tokens.
func spaceOutsideStrings(raw []byte) bool {
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case isSpace(c):
			return true
		case c == '"':
			for i++; i < len(raw) && raw[i] != '"'; i++ {
				if raw[i] == '\\' {
					i++
				}
			}
		}
	}
	return false
}

// appendBytesMember appends an omitempty []byte member as encoding/json does: standard base64.
func appendBytesMember(dst []byte, name string, b []byte) []byte {
	if len(b) == 0 {
		return dst
	}
	dst = append(appendKey(dst, name), '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

// checkpointSizeHint is about the encoded size of r, to allocate once.
func checkpointSizeHint(r *checkpointRecord) int {
	n := 256 + len(r.ID) + len(r.Tenant) + len(r.PreviousID) + len(r.Model) + len(r.Instructions) +
		len(r.Response) + len(r.Request) + 2*(len(r.Generated)+len(r.Suffix))
	for _, list := range [][]string{r.Input, r.Output, r.Conversation} {
		for _, s := range list {
			n += len(s) + 3
		}
	}
	for k, v := range r.Notes {
		n += len(k) + len(v) + 6
	}
	return n
}

func sortedStringKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// Insertion sort: a checkpoint's notes are few.
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// parseCheckpointRecord reads b as json.Unmarshal would into a checkpointRecord, reporting false
// (r then undefined) where b is not in the layout appendCheckpointRecord writes: no whitespace
// between tokens, only the record's own member names, each once. A value that layout holds but
// this parser does not read itself (a string with escapes or non-ASCII bytes, a null) is decoded
// by json.Unmarshal alone; a raw value is checked with validJSON. The caller then decodes b with
// json.Unmarshal, which also gives the error of a record that is not valid.
func parseCheckpointRecord(b []byte, r *checkpointRecord) bool {
	p := recordParser{b: b}
	if !p.consume('{') {
		return false
	}
	var seen uint32
	for first := true; ; first = false {
		if p.consume('}') {
			return p.atEnd()
		}
		if !first && !p.consume(',') {
			return false
		}
		name, ok := p.plainString()
		if !ok || !p.consume(':') {
			return false
		}
		bit, ok := recordMembers[name]
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		if !p.member(name, r) {
			return false
		}
	}
}

// recordMembers are the member names of checkpointRecord, each with a bit for the set seen.
var recordMembers = map[string]uint32{
	"v": 1 << 0, "id": 1 << 1, "tenant": 1 << 2, "prev": 1 << 3, "model": 1 << 4, "status": 1 << 5,
	"created_at": 1 << 6, "input": 1 << 7, "output": 1 << 8, "conversation": 1 << 9,
	"instructions": 1 << 10, "response": 1 << 11, "request": 1 << 12, "mode": 1 << 13, "fp": 1 << 14,
	"prompt_len": 1 << 15, "generated": 1 << 16, "suffix": 1 << 17, "notes": 1 << 18,
}

// recordParser reads a record's tokens from b at i.
type recordParser struct {
	b []byte
	i int
}

func (p *recordParser) consume(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *recordParser) atEnd() bool { return p.i == len(p.b) }

// member reads the value of the member name into r.
func (p *recordParser) member(name string, r *checkpointRecord) bool {
	switch name {
	case "v":
		return p.int(&r.V)
	case "id":
		return p.string(&r.ID)
	case "tenant":
		return p.string(&r.Tenant)
	case "prev":
		return p.string(&r.PreviousID)
	case "model":
		return p.string(&r.Model)
	case "status":
		return p.string(&r.Status)
	case "instructions":
		return p.string(&r.Instructions)
	case "fp":
		return p.string(&r.Fingerprint)
	case "created_at":
		tok, ok := p.value()
		return ok && r.CreatedAt.UnmarshalJSON(tok) == nil
	case "input":
		return p.strings(&r.Input)
	case "output":
		return p.strings(&r.Output)
	case "conversation":
		return p.strings(&r.Conversation)
	case "response":
		return p.raw(&r.Response)
	case "request":
		return p.raw(&r.Request)
	case "mode":
		var m int
		if !p.int(&m) || m > 255 {
			return false
		}
		r.Mode = Mode(m)
		return true
	case "prompt_len":
		return p.int(&r.PromptLen)
	case "generated":
		return p.base64(&r.Generated)
	case "suffix":
		return p.base64(&r.Suffix)
	case "notes":
		tok, ok := p.value()
		return ok && json.Unmarshal(tok, &r.Notes) == nil
	}
	return false
}

// int reads a non-negative integer of at most 15 digits.
func (p *recordParser) int(dst *int) bool {
	start, v := p.i, 0
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' && p.i-start < 15 {
		v = 10*v + int(p.b[p.i]-'0')
		p.i++
	}
	n := p.i - start
	if n == 0 || n > 1 && p.b[start] == '0' || p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		return false
	}
	*dst = v
	return true
}

// plainString reads a string of printable ASCII without escapes, returning its contents.
func (p *recordParser) plainString() (string, bool) {
	if !p.consume('"') {
		return "", false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := string(p.b[start:p.i])
			p.i++
			return s, true
		case c < 0x20 || c == '\\' || c >= utf8.RuneSelf:
			return "", false
		}
		p.i++
	}
	return "", false
}

// string reads a string member into dst: directly when plain, else through json.Unmarshal.
func (p *recordParser) string(dst *string) bool {
	start := p.i
	if s, ok := p.plainString(); ok {
		*dst = s
		return true
	}
	p.i = start
	tok, ok := p.value()
	return ok && json.Unmarshal(tok, dst) == nil
}

// strings reads a []string member: plain strings directly, anything else through json.Unmarshal.
func (p *recordParser) strings(dst *[]string) bool {
	start := p.i
	if p.consume('[') {
		var list []string
		if p.consume(']') {
			*dst = []string{}
			return true
		}
		for {
			s, ok := p.plainString()
			if !ok {
				break
			}
			list = append(list, s)
			if p.consume(']') {
				*dst = list
				return true
			}
			if !p.consume(',') {
				break
			}
		}
	}
	p.i = start
	tok, ok := p.value()
	return ok && json.Unmarshal(tok, dst) == nil
}

// raw reads a json.RawMessage member (a copy of the value, checked as JSON by validJSON).
func (p *recordParser) raw(dst *json.RawMessage) bool {
	tok, ok := p.value()
	if !ok || !validJSON(tok) {
		return false
	}
	if bytes.Equal(tok, []byte("null")) {
		*dst = json.RawMessage("null")
		return true
	}
	*dst = append(json.RawMessage(nil), tok...)
	return true
}

// base64 reads a []byte member, standard base64 as encoding/json writes it.
func (p *recordParser) base64(dst *[]byte) bool {
	start := p.i
	if s, ok := p.plainString(); ok {
		b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
		n, err := base64.StdEncoding.Decode(b, []byte(s))
		if err != nil {
			return false
		}
		*dst = b[:n]
		return true
	}
	p.i = start
	tok, ok := p.value()
	return ok && json.Unmarshal(tok, dst) == nil
}

// value steps over one JSON value and returns its bytes, without checking it beyond finding where
// it ends: a string to its closing quote, an array or object to its matching bracket, anything
// else to the next ',', '}' or ']'. Callers check the value (json.Unmarshal, validJSON). A value
// with whitespace around it is refused: json.Unmarshal leaves that out of a json.RawMessage.
func (p *recordParser) value() ([]byte, bool) {
	tok, ok := p.token()
	if !ok || len(tok) == 0 || isSpace(tok[0]) || isSpace(tok[len(tok)-1]) {
		return nil, false
	}
	return tok, true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// token is value without the whitespace check.
func (p *recordParser) token() ([]byte, bool) {
	start, depth := p.i, 0
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch c {
		case '"':
			p.i++
			for p.i < len(p.b) && p.b[p.i] != '"' {
				if p.b[p.i] == '\\' {
					p.i++
				}
				p.i++
			}
			if p.i >= len(p.b) {
				return nil, false
			}
		case '[', '{':
			depth++
		case ']', '}':
			if depth == 0 {
				return p.b[start:p.i], p.i > start
			}
			depth--
		case ',':
			if depth == 0 {
				return p.b[start:p.i], p.i > start
			}
		}
		p.i++
		if depth == 0 && (c == '"' || c == ']' || c == '}') {
			return p.b[start:p.i], true
		}
	}
	return nil, false
}
