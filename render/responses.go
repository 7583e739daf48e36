package render

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/tidwall/gjson"
)

// ResponsesInput is what a Responses request contributes to the chat: its own `instructions`
// (never an earlier response's: OpenAI does not carry instructions over previous_response_id),
// the ordered conversation items (earlier ones from the store, then the request's `input`),
// and the request's `tools` array.
type ResponsesInput struct {
	// Instructions becomes a leading system message when non-empty.
	Instructions string
	// Items are Responses input/output items as raw JSON objects, in conversation order. A
	// request whose `input` is a plain string should pass {"role":"user","content":<string>}.
	Items []json.RawMessage
	// ItemParam returns the OpenAI param path of Items[i] for error messages; nil means
	// "input[i]".
	ItemParam func(i int) string
	// Tools is the raw `tools` array; nil or null means none.
	Tools json.RawMessage
	// Cache, when set, keeps parsed items across calls: an item repeated byte for byte (every
	// turn of a conversation passes its earlier items again) is not parsed twice. The Messages
	// then share their strings with the cache and with other Conversations built from the same
	// items. Nil parses every item.
	Cache *ItemCache
	// Tenant is the request's tenant: the Cache's entries are the tenant's own (another tenant's
	// request neither finds them nor can time whether an item was seen), and the stored items
	// are read for it.
	Tenant string
	// StoredIDs, when set, are the ids under which Items[:len(StoredIDs)] were read from the
	// response store for Tenant (a previous response's conversation): the Cache then compares
	// such an item's bytes with its entry only the first time (ItemCache.getStored). "" leaves
	// an item unnamed.
	StoredIDs []string
	// Resume, with Cache and StoredIDs, is an earlier turn's Conversation.Prefix: when it covers
	// this input's first stored items (the same instructions, tenant, ids and bytes), their
	// messages are taken from it instead of being mapped again. Any other prefix is ignored.
	Resume *ItemsPrefix
	// KeepPrefix, with Cache and StoredIDs, asks for Conversation.Prefix.
	KeepPrefix bool
}

// Conversation is the chat form of a Responses request.
type Conversation struct {
	Messages []Message
	// Tools are the function tools (namespace tools flattened), in request order.
	Tools []Tool
	// SkippedTools names tools that are not functions (web_search, file_search, mcp, custom …):
	// they are not shown to the model. The caller should log them.
	SkippedTools []string
	// Prefix is the state after the input's stored items, for the next turn's
	// ResponsesInput.Resume (ResponsesInput.KeepPrefix); nil when not asked for or none.
	Prefix *ItemsPrefix
	// Resumed is the number of items taken from ResponsesInput.Resume.
	Resumed     int
	toolsDigest string // ToolsDigest(Tools) when known
}

// ToolsDigest returns ToolsDigest(c.Tools), computed once per tools array when FromResponses had
// an ItemCache.
func (c *Conversation) ToolsDigest() string {
	if c.toolsDigest == "" {
		c.toolsDigest = ToolsDigest(c.Tools)
	}
	return c.toolsDigest
}

// FromResponses maps Responses items to chat messages the way a chat-completions client would
// send the same conversation:
//
//   - instructions → a leading system message; role developer → system.
//   - message items (with or without "type") → messages; content parts input_text, output_text
//     and refusal become text joined with "\n"; images, files and audio are ErrUnsupported.
//   - function_call items → the assistant message's tool_calls. Consecutive calls form one
//     assistant turn, and calls directly after an assistant message item attach to it: the model
//     produced them in one generation ("text<tool_call>…</tool_call><tool_call>…"), which is how
//     OpenAI splits one assistant turn into output items. vLLM's own Responses server instead makes
//     one assistant message per call, which renders parallel calls as several assistant turns the
//     model never produced.
//   - function_call_output → a tool message (tool_call_id = call_id).
//   - reasoning items → the reasoning of the next assistant turn (message or tool calls); the
//     content texts (else the summary texts) joined with "\n"; encrypted_content is opaque and
//     never rendered. Reasoning not followed by an assistant item before the next user, system or
//     tool message is dropped: there is no assistant turn to carry it.
//
// Errors are *InputError values carrying the OpenAI param path. With in.Cache, items seen in an
// earlier call are not parsed again (see ItemCache); the result is the same.
func FromResponses(in ResponsesInput) (*Conversation, error) {
	conv := &Conversation{}
	pt, ok := in.Cache.getTools(in.Tenant, in.Tools)
	if !ok {
		tools, skipped, err := ParseResponsesTools(in.Tools)
		if err != nil {
			return nil, err
		}
		pt = &parsedTools{tools: tools, skipped: skipped}
		if in.Cache != nil {
			pt.digest = ToolsDigest(tools)
			in.Cache.putTools(in.Tenant, in.Tools, pt)
		}
	}
	conv.Tools, conv.SkippedTools, conv.toolsDigest = pt.tools, pt.skipped, pt.digest
	b := itemBuilder{conv: conv}
	var digest *itemsDigest
	if in.Cache != nil && len(in.StoredIDs) > 0 && len(in.StoredIDs) <= len(in.Items) && (in.Resume != nil || in.KeepPrefix) {
		digest = newItemsDigest(&in)
		defer digest.release(in.Cache)
		conv.Resumed = digest.resumeInto(&b, len(in.Items))
	}
	if conv.Resumed == 0 {
		// Every item makes at most one message (most make one): sized once, not grown by
		// doubling (a 100k-token history's ~120 messages were ~30 KB copied per turn, issue 20),
		// with room for the next turns' messages when the array becomes a prefix's.
		size := len(in.Items) + 1
		if digest != nil && in.KeepPrefix {
			size += messageRoom(size)
		}
		conv.Messages = make([]Message, 0, size)
		if in.Instructions != "" {
			conv.Messages = append(conv.Messages, Message{Role: "system", Content: in.Instructions})
		}
	}
	th := in.Cache.tenantHash(in.Tenant)
	for i := conv.Resumed; i < len(in.Items); i++ {
		raw := in.Items[i]
		if digest != nil && in.KeepPrefix && i == len(in.StoredIDs) {
			conv.Prefix = digest.prefixAfter(&b, conv.Resumed)
		}
		name := StoredItem{Tenant: in.Tenant}
		if i < len(in.StoredIDs) {
			name.ID = in.StoredIDs[i]
		}
		h, p, ok := in.Cache.getStored(name, th, raw)
		if !ok {
			// The param path is built only here: a cache hit never needs it.
			var err error
			if p, err = parseItem(raw, in.param(i)); err != nil {
				return nil, err
			}
			in.Cache.putStored(name, h, raw, p)
		}
		b.apply(p)
	}
	if digest != nil && in.KeepPrefix && len(in.StoredIDs) == len(in.Items) {
		conv.Prefix = digest.prefixAfter(&b, conv.Resumed)
	}
	b.finish()
	return conv, nil
}

// param is the OpenAI param path of Items[i].
func (in *ResponsesInput) param(i int) string {
	if in.ItemParam != nil {
		return in.ItemParam(i)
	}
	return fmt.Sprintf("input[%d]", i)
}

// itemKind is what an item contributes to the chat.
type itemKind uint8

const (
	kindMessage   itemKind = iota // a message with role and content
	kindCall                      // a function_call
	kindOutput                    // a function_call_output
	kindReasoning                 // a reasoning item
)

// parsedItem is one item with its JSON read: everything apply needs and nothing that depends
// on the item's position, so that an ItemCache can hand the same value to every request that
// repeats the item. Its strings and Arguments end up in the Messages built from it, shared
// between all of them: nothing may modify them.
type parsedItem struct {
	kind itemKind
	// role is the message role, developer already mapped to system.
	role string
	// content is a message's content or a function_call_output's output text.
	content string
	// callID is a call's or an output's call_id; name the called function.
	callID, name string
	// arguments is a call's raw arguments (a JSON string), nil when absent or null. Its capacity
	// equals its length, so that an append copies rather than writes into the shared bytes.
	arguments json.RawMessage
	// reasoning is a reasoning item's texts joined with "\n"; hasReasoning says there were any.
	reasoning    string
	hasReasoning bool
}

// stringBytes is the memory held by p's strings, for the cache's accounting.
func (p *parsedItem) stringBytes() int {
	return len(p.content) + len(p.callID) + len(p.name) + len(p.arguments) + len(p.reasoning)
}

// The top-level members parseItem reads, located while the item is validated: itemFields
// holds their values, indexed by these.
const (
	fieldType = iota
	fieldRole
	fieldContent
	fieldCallID
	fieldName
	fieldArguments
	fieldOutput
	fieldSummary
	numFields
)

type itemFields [numFields]jsonVal

// parseItem reads one Responses item (raw JSON). param is the item's OpenAI param path, used
// only in errors, which are *InputError values.
func parseItem(raw []byte, param string) (parsedItem, error) {
	keys := [numFields]string{
		fieldType: "type", fieldRole: "role", fieldContent: "content", fieldCallID: "call_id",
		fieldName: "name", fieldArguments: "arguments", fieldOutput: "output", fieldSummary: "summary",
	}
	var f itemFields
	if !validItem(raw, &memberSet{keys: keys[:], vals: f[:]}) {
		return parsedItem{}, invalid(param, "not valid JSON")
	}
	if !jsonVal(raw[skipWS(raw, 0):]).isObject() {
		return parsedItem{}, invalid(param, "must be an object")
	}
	kind := "message"
	if typ := f[fieldType]; typ.exists() {
		if !typ.isString() {
			return parsedItem{}, invalid(param+".type", "must be a string")
		}
		kind = typ.str()
	}
	switch kind {
	case "message":
		return parseMessage(&f, param)
	case "function_call":
		return parseCall(&f, param)
	case "function_call_output":
		return parseOutput(&f, param)
	case "reasoning":
		return parseReasoning(&f, param)
	case "item_reference":
		return parsedItem{}, unsupported(param+".type", "item_reference must be resolved before rendering")
	case "custom_tool_call", "custom_tool_call_output", "local_shell_call", "local_shell_call_output",
		"shell_call", "shell_call_output", "apply_patch_call", "apply_patch_call_output",
		"web_search_call", "file_search_call", "computer_call", "computer_call_output",
		"code_interpreter_call", "image_generation_call", "mcp_call", "mcp_list_tools",
		"mcp_approval_request", "mcp_approval_response", "compaction":
		return parsedItem{}, unsupported(param+".type", "item type %q is not supported", kind)
	default:
		return parsedItem{}, invalid(param+".type", "unknown item type %q", kind)
	}
}

func parseMessage(f *itemFields, param string) (parsedItem, error) {
	if !f[fieldRole].isString() {
		return parsedItem{}, invalid(param+".role", "must be a string")
	}
	p := parsedItem{kind: kindMessage}
	switch role := f[fieldRole].str(); role {
	case "user":
		p.role = "user"
	case "system", "developer":
		p.role = "system"
	case "assistant":
		p.role = "assistant"
	default:
		return parsedItem{}, invalid(param+".role", "unknown role %q", role)
	}
	var err error
	p.content, err = responsesContent(f[fieldContent], param+".content")
	return p, err
}

func parseCall(f *itemFields, param string) (parsedItem, error) {
	if !f[fieldCallID].isString() {
		return parsedItem{}, invalid(param+".call_id", "must be a string")
	}
	if !f[fieldName].isString() {
		return parsedItem{}, invalid(param+".name", "must be a string")
	}
	p := parsedItem{kind: kindCall, callID: f[fieldCallID].str(), name: f[fieldName].str()}
	switch args := f[fieldArguments]; {
	case args.isString():
		p.arguments = json.RawMessage(slices.Clip(slices.Clone(args)))
	case args.isNullish():
		// Absent or null: vLLM renders {}.
	default:
		return parsedItem{}, invalid(param+".arguments", "must be a string")
	}
	return p, nil
}

func parseOutput(f *itemFields, param string) (parsedItem, error) {
	if !f[fieldCallID].isString() {
		return parsedItem{}, invalid(param+".call_id", "must be a string")
	}
	p := parsedItem{kind: kindOutput, callID: f[fieldCallID].str()}
	switch out := f[fieldOutput]; {
	case out.isString():
		p.content = out.str()
	case out.isArray():
		var err error
		if p.content, err = responsesContent(out, param+".output"); err != nil {
			return parsedItem{}, err
		}
	default:
		return parsedItem{}, invalid(param+".output", "must be a string or an array of content parts")
	}
	return p, nil
}

func parseReasoning(f *itemFields, param string) (parsedItem, error) {
	texts, err := partTexts(f[fieldContent], param+".content", "reasoning_text", "text")
	if err != nil {
		return parsedItem{}, err
	}
	if texts == nil {
		if texts, err = partTexts(f[fieldSummary], param+".summary", "summary_text", "text"); err != nil {
			return parsedItem{}, err
		}
	}
	p := parsedItem{kind: kindReasoning}
	if texts != nil {
		p.reasoning, p.hasReasoning = strings.Join(texts, "\n"), true
	}
	return p, nil
}

// partTexts reads a reasoning item's content or summary list: null/absent → nil.
func partTexts(list jsonVal, param, wantType, field string) ([]string, error) {
	if list.isNullish() {
		return nil, nil
	}
	if !list.isArray() {
		return nil, invalid(param, "must be an array or null")
	}
	var texts []string
	j := 0
	for part := range list.elems() {
		t, err := reasoningPart(part, param, j, wantType, field)
		if err != nil {
			return nil, err
		}
		texts = append(texts, t)
		j++
	}
	return texts, nil
}

// reasoningPart reads part j of a reasoning list: {"type": wantType (optional), field: text}.
func reasoningPart(part jsonVal, param string, j int, wantType, field string) (string, error) {
	if !part.isObject() {
		return "", invalid(partParam(param, j), "must be an object")
	}
	keys := [...]string{"type", field}
	var vals [len(keys)]jsonVal
	part.lookup(keys[:], vals[:])
	typ, t := vals[0], vals[1]
	if typ.exists() && typ.str() != wantType {
		return "", invalid(partParam(param, j)+".type", "unknown part type %q (want %q)", typ.text(), wantType)
	}
	if !t.isString() {
		return "", invalid(partParam(param, j)+"."+field, "must be a string")
	}
	return t.str(), nil
}

// responsesContent reads a message's content: a string, or a list of parts of which
// input_text / output_text (their text) and refusal (its refusal) are kept, joined with "\n".
func responsesContent(c jsonVal, param string) (string, error) {
	switch {
	case c.isString():
		return c.str(), nil
	case c.isNullish():
		return "", nil
	case !c.isArray():
		return "", invalid(param, "must be a string or an array of content parts")
	}
	var texts []string
	j := 0
	for part := range c.elems() {
		t, err := contentPart(part, param, j)
		if err != nil {
			return "", err
		}
		texts = append(texts, t)
		j++
	}
	return strings.Join(texts, "\n"), nil
}

// contentPart reads part j of a content list: the text of a text part, the refusal of a refusal.
func contentPart(part jsonVal, param string, j int) (string, error) {
	if !part.isObject() {
		return "", invalid(partParam(param, j), "must be an object")
	}
	keys := [...]string{"type", "text", "refusal"}
	var vals [len(keys)]jsonVal
	part.lookup(keys[:], vals[:])
	typ := vals[0]
	if !typ.isString() {
		return "", invalid(partParam(param, j)+".type", "must be a string")
	}
	field, t := "text", vals[1]
	switch ts := typ.str(); ts {
	case "input_text", "output_text", "text":
	case "refusal":
		field, t = "refusal", vals[2]
	case "input_image", "input_file", "input_audio":
		return "", unsupported(partParam(param, j)+".type", "content part type %q is not supported (text-only renderer)", ts)
	default:
		return "", invalid(partParam(param, j)+".type", "unknown content part type %q", ts)
	}
	if !t.isString() {
		return "", invalid(partParam(param, j)+"."+field, "must be a string")
	}
	return t.str(), nil
}

// partParam is the param path of part j of the list at param. Only errors build it.
func partParam(param string, j int) string { return fmt.Sprintf("%s[%d]", param, j) }

// itemBuilder folds items into messages. When openSet, message open is the assistant message
// that following function_call items attach to; reasoning holds the texts waiting for the next
// assistant turn (hasReason: at least one).
//
// Without arena, conv.Messages holds every message, in an array the builder owns. With arena,
// the conversation begins with shared, messages published in arena (an ItemsPrefix's, never
// written again), and conv.Messages holds only the messages after them; finish joins the two.
type itemBuilder struct {
	conv      *Conversation
	arena     *messageArena
	shared    []Message
	open      int
	openSet   bool
	reasoning []string
	hasReason bool
}

// add appends a message.
func (b *itemBuilder) add(m Message) {
	b.conv.Messages = append(b.conv.Messages, m)
}

// count is the number of messages so far.
func (b *itemBuilder) count() int { return len(b.shared) + len(b.conv.Messages) }

// message returns message i for writing: a published one is first copied, with every other,
// into an array of the builder's own (unshare).
func (b *itemBuilder) message(i int) *Message {
	if i < len(b.shared) {
		b.unshare()
	}
	return &b.conv.Messages[i-len(b.shared)]
}

// unshare copies the shared messages and the ones after them into an array of the builder's
// own.
func (b *itemBuilder) unshare() {
	all := make([]Message, 0, b.count())
	all = append(append(all, b.shared...), b.conv.Messages...)
	b.conv.Messages, b.shared, b.arena = all, nil, nil
}

// publish makes every message so far a published one (an ItemsPrefix's): the owned array
// becomes an arena, or the messages after the shared ones are appended to its arena (compared
// with those a preparation of the same turn published there before), or, when they do not fit
// or differ, every message is copied into a new arena with room.
func (b *itemBuilder) publish() {
	switch {
	case b.arena == nil:
		msgs := b.conv.Messages
		b.arena = &messageArena{buf: msgs[:cap(msgs)], used: len(msgs)}
		b.shared = msgs[:len(msgs):len(msgs)]
	case len(b.conv.Messages) == 0:
		return
	default:
		if all, ok := b.arena.extend(b.shared, b.conv.Messages); ok {
			b.shared = all
		} else {
			n := b.count()
			buf := make([]Message, 0, n+messageRoom(n))
			buf = append(append(buf, b.shared...), b.conv.Messages...)
			b.arena = &messageArena{buf: buf[:cap(buf)], used: n}
			b.shared = buf[:n:n]
		}
	}
	b.conv.Messages = nil
}

// finish leaves conv.Messages holding every message: the shared ones and those after them,
// in the arena's room when they fit there (see publish), else copied.
func (b *itemBuilder) finish() {
	if b.arena == nil {
		return
	}
	if len(b.conv.Messages) > 0 {
		if all, ok := b.arena.extend(b.shared, b.conv.Messages); ok {
			b.conv.Messages, b.shared, b.arena = all, nil, nil
			return
		}
		b.unshare()
		return
	}
	b.conv.Messages, b.shared, b.arena = b.shared, nil, nil
}

func (b *itemBuilder) closeTurn() { b.openSet = false }

// dropReasoning forgets reasoning that no assistant turn followed (see FromResponses).
func (b *itemBuilder) dropReasoning() { b.reasoning, b.hasReason = nil, false }

func (b *itemBuilder) takeReasoning() *string {
	if !b.hasReason {
		return nil
	}
	s := strings.Join(b.reasoning, "\n")
	b.reasoning, b.hasReason = nil, false
	return &s
}

// apply folds one parsed item into the conversation. It cannot fail: parseItem found every
// error. Pointers (Reasoning, ToolCallID) are new for each message, since callers may set them.
func (b *itemBuilder) apply(p parsedItem) {
	switch p.kind {
	case kindMessage:
		b.applyMessage(p)
	case kindCall:
		b.applyCall(p)
	case kindOutput:
		id := p.callID
		b.dropReasoning()
		b.add(Message{Role: "tool", Content: p.content, ToolCallID: &id})
		b.closeTurn()
	case kindReasoning:
		if p.hasReasoning {
			b.reasoning = append(b.reasoning, p.reasoning)
			b.hasReason = true
		}
		// The item breaks an open assistant turn: a call after it belongs to a new generation.
		b.closeTurn()
	}
}

func (b *itemBuilder) applyMessage(p parsedItem) {
	msg := Message{Role: p.role, Content: p.content}
	if p.role == "assistant" {
		msg.Reasoning = b.takeReasoning()
		b.add(msg)
		b.open, b.openSet = b.count()-1, true
		return
	}
	b.dropReasoning()
	b.add(msg)
	b.closeTurn()
}

func (b *itemBuilder) applyCall(p parsedItem) {
	call := ToolCall{ID: p.callID, Type: "function", Name: p.name, Arguments: p.arguments}
	// Reasoning between an assistant item and this call starts a new turn.
	if b.openSet && !b.hasReason {
		m := b.message(b.open)
		// Clipped: a published copy of the message (an ItemsPrefix's) may share the calls'
		// array, whose room is not this turn's to write.
		m.ToolCalls = append(slices.Clip(m.ToolCalls), call)
		return
	}
	// The turn has no text: content null, as the chat message a client would send for it
	// (a template in the openai content format sees []).
	b.add(Message{
		Role: "assistant", NullContent: true, ToolCalls: []ToolCall{call}, Reasoning: b.takeReasoning(),
	})
	b.open, b.openSet = b.count()-1, true
}

// ParseResponsesTools reads a Responses `tools` array. Function tools
// {type:"function",name,description,parameters,strict} become Tools; namespace tools
// {type:"namespace",name,tools:[…]} (Codex) contribute their functions under their own names;
// every other type is skipped and named in the second result.
func ParseResponsesTools(raw json.RawMessage) ([]Tool, []string, error) {
	if len(raw) == 0 {
		return nil, nil, nil
	}
	if !gjson.ValidBytes(raw) {
		return nil, nil, invalid("tools", "not valid JSON")
	}
	arr := gjson.ParseBytes(raw)
	if arr.Type == gjson.Null {
		return nil, nil, nil
	}
	if !arr.IsArray() {
		return nil, nil, invalid("tools", "must be an array")
	}
	var tools []Tool
	var skipped []string
	var walk func(list gjson.Result, param string, nested bool) error
	walk = func(list gjson.Result, param string, nested bool) error {
		var err error
		i := 0
		list.ForEach(func(_, t gjson.Result) bool {
			p := fmt.Sprintf("%s[%d]", param, i)
			i++
			if !t.IsObject() {
				err = invalid(p, "must be an object")
				return false
			}
			typ := t.Get("type")
			if typ.Type != gjson.String {
				err = invalid(p+".type", "must be a string")
				return false
			}
			switch {
			case typ.Str == "function":
				var tool Tool
				tool, err = parseFunction(t, p)
				if err != nil {
					return false
				}
				tools = append(tools, tool)
			case typ.Str == "namespace" && !nested:
				sub := t.Get("tools")
				if !sub.IsArray() {
					err = invalid(p+".tools", "must be an array")
					return false
				}
				err = walk(sub, p+".tools", true)
				return err == nil
			default:
				skipped = append(skipped, typ.Str)
			}
			return true
		})
		return err
	}
	if err := walk(arr, "tools", false); err != nil {
		return nil, nil, err
	}
	return tools, skipped, nil
}
