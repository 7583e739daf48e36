package harmony

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/stitchllm/stitch/render"
	"github.com/tidwall/gjson"
)

// Request is what one Responses request contributes to a Harmony prompt.
type Request struct {
	// Instructions is the request's `instructions`; nil when absent or null. An empty string is
	// kept (vLLM then renders no developer message unless there are function tools, and an empty
	// "# Instructions" section if there are).
	Instructions *string
	// Effort is `reasoning.effort`: "", "low", "medium" or "high" ("" states medium).
	Effort string
	// Items are the conversation's Responses items as raw JSON objects, in order: earlier turns'
	// items (from the store, on a continuation), then this request's `input`. A plain string
	// input is passed as {"role":"user","content":<string>}.
	Items []json.RawMessage
	// ItemParam returns the OpenAI param path of Items[i] for errors; nil means "input[i]".
	ItemParam func(i int) string
	// Tools is the raw `tools` array; nil or null means none.
	Tools json.RawMessage
	// Cache, when set, keeps items mapped across calls (an item repeated byte for byte is not
	// read again); the result is the same. Nil reads every item.
	Cache *ItemCache
	// Tenant is the request's tenant: Cache entries are found only by its own requests.
	Tenant string
	// StoredIDs, when set, are the ids under which Items[:len(StoredIDs)] were read from the
	// response store for Tenant: the Cache then finds such an item by its id, checking only its
	// length and samples of its bytes, once its bytes matched an entry (ItemCache). "" leaves an
	// item unnamed.
	StoredIDs []string
	// Notes are the previous response's checkpoint notes (store.Checkpoint.ItemNotes) by stored
	// id: an item read under a noted id is an earlier output message, rendered with the header
	// the model generated it with ([Generated]), as vLLM's message store holds it. Nil: none.
	Notes map[string]string
	// NewInput, when > 0, says the request continues a stored response whose conversation is
	// Items[:NewInput]: the new input's items then map as vLLM's message-store path maps them,
	// which drops a system message among them (only a system item with InstructionsInSystem
	// maps to one); [Conversation.DroppedItems] lists them, for the caller to note.
	NewInput int
}

// storedID is the store id Items[i] was read under, "" if none.
func (req *Request) storedID(i int) string {
	if i < len(req.StoredIDs) {
		return req.StoredIDs[i]
	}
	return ""
}

// Options are the deployment's Harmony settings (vLLM's environment).
type Options struct {
	// StartDate is the conversation start date, "YYYY-MM-DD". vLLM uses VLLM_SYSTEM_START_DATE
	// when set and otherwise today's date, so an unpinned server changes every prompt's first
	// tokens (and misses the prefix cache) when the day rolls over; see [StartDate].
	StartDate string
	// InstructionsInSystem is VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS: instructions (and system
	// messages in the input) join the model identity in the system message instead of the
	// developer message's "# Instructions".
	InstructionsInSystem bool
	// ModelIdentity and KnowledgeCutoff override openai_harmony's defaults when non-empty.
	ModelIdentity   string
	KnowledgeCutoff string
}

// StartDate returns the conversation start date vLLM uses: pinned (the VLLM_SYSTEM_START_DATE
// value or a flag) when non-empty, else now's date in now's location, as "YYYY-MM-DD".
func StartDate(pinned string, now time.Time) string {
	if pinned != "" {
		return pinned
	}
	return now.Format("2006-01-02")
}

// Conversation is the Harmony form of a Responses request.
type Conversation struct {
	Messages []Message
	// MessageItems[i] is the index in Request.Items of the item Messages[i] came from; -1 for
	// the system and developer messages of the preamble (a leading instruction item consumed
	// into them included).
	MessageItems []int
	// FunctionNames are the declared function tools, in request order (a stream parser can
	// accept a call whose recipient lacks the "functions." prefix when its name is one of them).
	FunctionNames []string
	// DroppedItems are the indexes in Request.Items of new input items that vLLM's
	// message-store path leaves out (Request.NewInput).
	DroppedItems []int
	// SkippedTools names tools that are not functions (web_search, file_search, mcp …): they are
	// not shown to the model. The caller should log them.
	SkippedTools []string
}

// maxDepth bounds JSON nesting in tool schemas and items: serde_json refuses deeper input, and
// gjson's walk recurses.
const maxDepth = 128

// FromResponses maps a Responses request to Harmony messages as vLLM's /v1/responses does for
// gpt-oss (build_harmony_preamble, then response_input_to_harmony for each item):
//
//   - the system message: identity, knowledge cutoff, the start date, the effort (medium when
//     none), the three channels;
//   - instructions: the request's, else the text of a leading system or developer item, which is
//     then consumed; they go to a developer message ("# Instructions") with the function tools,
//     which exists only when there are instructions or function tools;
//   - message items: user and assistant content parts one by one (assistant → final channel);
//     a later system or developer item becomes a developer message with its text, skipped when
//     it has no text (with InstructionsInSystem: a system item becomes a second system message,
//     and a developer item an empty developer message, because vLLM's get_developer_message
//     drops instructions in that mode);
//   - reasoning items → assistant analysis (content texts joined with "\n"; none → skipped);
//   - function_call → assistant to=functions.NAME on commentary with content type json;
//   - function_call_output → a message from functions.NAME (the name of the latest earlier call
//     with that call_id) to=assistant on commentary.
//
// Errors are *render.InputError values carrying the OpenAI param.
func FromResponses(req Request, opts Options) (*Conversation, error) {
	if opts.StartDate == "" {
		return nil, fmt.Errorf("harmony: Options.StartDate is required")
	}
	if depth(req.Tools) >= maxDepth {
		return nil, invalid("tools", "nested deeper than %d levels", maxDepth-1)
	}
	tools, skipped, err := render.ParseResponsesTools(req.Tools)
	if err != nil {
		return nil, err
	}
	conv := &Conversation{SkippedTools: skipped}
	descs := make([]ToolDescription, 0, len(tools))
	for _, t := range tools {
		d := ToolDescription{Name: t.Name}
		if t.Description != nil {
			d.Description = *t.Description
		}
		if p := t.Parameters; len(p) > 0 && string(p) != "null" {
			d.Parameters = p
		}
		descs = append(descs, d)
		conv.FunctionNames = append(conv.FunctionNames, t.Name)
	}
	effort, err := parseEffort(req.Effort)
	if err != nil {
		return nil, err
	}

	items := make([]gjson.Result, len(req.Items))
	cached := make([]*cachedItem, len(req.Items))
	for i, raw := range req.Items {
		if cached[i] = req.Cache.get(req.Tenant, req.storedID(i), raw); cached[i] != nil {
			// Not parsed (gjson.ParseBytes copies the item): the entry has what the mapping
			// reads, and the one case that reads the item again parses it then.
			continue
		}
		if depth(raw) >= maxDepth || !gjson.ValidBytes(raw) {
			return nil, invalid(itemParam(req, i), "not a valid JSON object")
		}
		items[i] = gjson.ParseBytes(raw)
		if !items[i].IsObject() {
			return nil, invalid(itemParam(req, i), "must be an object")
		}
	}
	instructions := req.Instructions
	first := 0
	// A cached item is no system or developer message (those are not cached).
	if instructions == nil && len(items) > 0 && cached[0] == nil && isInstructionItem(items[0]) {
		c, _ := field(items[0], "content")
		instructions = flattenText(c)
		first = 1
	}

	conv.Messages = append(conv.Messages, systemMessage(opts, effort, instructions))
	conv.MessageItems = append(conv.MessageItems, -1)
	if !opts.InstructionsInSystem && instructions != nil && *instructions != "" || len(descs) > 0 {
		dev := &DeveloperContent{Tools: descs}
		if !opts.InstructionsInSystem {
			dev.Instructions = instructions
		}
		conv.Messages = append(conv.Messages, Message{Role: RoleDeveloper, Developer: dev})
		conv.MessageItems = append(conv.MessageItems, -1)
	}
	calls := newCallIndex(items, cached)
	for i := first; i < len(items); i++ {
		m, ok, hit := cachedMessage(cached[i], calls, i)
		if !hit {
			// Not cached, or an output whose call this conversation lacks: read the item (its
			// error names it).
			if cached[i] != nil {
				items[i] = gjson.ParseBytes(req.Items[i]) // valid: it was when cached
			}
			var err error
			if m, ok, err = itemMessage(req, opts, items, calls, i); err != nil {
				return nil, err
			}
			if cached[i] == nil {
				req.Cache.put(req.Tenant, req.storedID(i), req.Items[i], cacheable(calls, i, m, ok))
			}
		}
		if ok {
			m, ok = req.generated(i, m)
		}
		if ok && req.NewInput > 0 && i >= req.NewInput && m.Role == RoleSystem {
			// serving.py _construct_input_messages_with_harmony: a continuation appends its
			// new input's messages "if new_msg.author.role != 'system'".
			ok = false
			conv.DroppedItems = append(conv.DroppedItems, i)
		}
		if ok {
			conv.Messages = append(conv.Messages, m)
			conv.MessageItems = append(conv.MessageItems, i)
		}
	}
	return conv, nil
}

// generated applies item i's note, if it has one, to its message m (after the item cache: the
// cache keeps what the item alone maps to): an output message gets the header it was generated
// with, and an item vLLM's message store holds no message for is dropped.
func (req *Request) generated(i int, m Message) (Message, bool) {
	if req.Notes == nil {
		return m, true
	}
	id := req.storedID(i)
	if id == "" {
		return m, true
	}
	note, found := req.Notes[id]
	if !found {
		return m, true
	}
	g, ok := ParseNote(note)
	switch {
	case !ok:
		return m, true // unreadable: the items path's message
	case g.Unfinished:
		return m, false
	case m.Role != RoleAssistant:
		return m, true
	}
	return g.apply(m)
}

// RenderResponses maps req with [FromResponses] and renders the prompt for the model's next turn, as vLLM
// prompts gpt-oss on /v1/responses.
func (e *Encoder) RenderResponses(req Request, opts Options) (*Conversation, Prompt, error) {
	conv, err := FromResponses(req, opts)
	if err != nil {
		return nil, Prompt{}, err
	}
	p, err := e.Render(conv.Messages, RenderOptions{})
	if err != nil {
		return nil, Prompt{}, err
	}
	return conv, p, nil
}

// CheckEffort reports whether s is a reasoning.effort gpt-oss takes ("" states none): an error
// is a *render.InputError naming reasoning.effort.
func CheckEffort(s string) error {
	_, err := parseEffort(s)
	return err
}

func parseEffort(s string) (Effort, error) {
	switch Effort(s) {
	case "":
		return "", nil
	case EffortLow, EffortMedium, EffortHigh:
		return Effort(s), nil
	}
	return "", &render.InputError{Param: "reasoning.effort", Message: fmt.Sprintf("%q is not supported by gpt-oss (Harmony): use low, medium or high", s), Err: render.ErrUnsupported}
}

// systemMessage is vLLM's get_system_message for a request.
func systemMessage(opts Options, effort Effort, instructions *string) Message {
	sys := DefaultSystemContent()
	if opts.ModelIdentity != "" {
		sys.ModelIdentity = opts.ModelIdentity
	}
	if opts.KnowledgeCutoff != "" {
		sys.KnowledgeCutoff = opts.KnowledgeCutoff
	}
	if instructions != nil && opts.InstructionsInSystem {
		if sys.ModelIdentity != "" {
			sys.ModelIdentity += "\n" + *instructions
		} else {
			sys.ModelIdentity = *instructions
		}
	}
	if effort != "" {
		sys.Effort = effort
	}
	sys.StartDate = opts.StartDate
	return Message{Role: RoleSystem, System: &sys}
}

func itemParam(req Request, i int) string {
	if req.ItemParam != nil {
		return req.ItemParam(i)
	}
	return fmt.Sprintf("input[%d]", i)
}

func invalid(param, format string, args ...any) error {
	return &render.InputError{Param: param, Message: fmt.Sprintf(format, args...), Err: render.ErrInvalidInput}
}

func unsupported(param, format string, args ...any) error {
	return &render.InputError{Param: param, Message: fmt.Sprintf(format, args...), Err: render.ErrUnsupported}
}

// itemType is an item's "type" ("message" when absent).
func itemType(it gjson.Result) string {
	if t, ok := fieldString(it, "type"); ok {
		return t
	}
	return "message"
}

func isInstructionItem(it gjson.Result) bool {
	if itemType(it) != "message" {
		return false
	}
	role, _ := fieldString(it, "role")
	return role == "system" || role == "developer"
}

// flattenText is vLLM's flatten_input_text_content: a string as is; a list's strings and "text"
// values joined with nothing; nil when there is no text.
func flattenText(c gjson.Result) *string {
	if c.Type == gjson.String {
		s := c.Str
		return &s
	}
	if !c.IsArray() {
		return nil
	}
	var texts []string
	for _, p := range c.Array() {
		switch {
		case p.Type == gjson.String:
			texts = append(texts, p.Str)
		case p.IsObject():
			if t, ok := fieldString(p, "text"); ok {
				texts = append(texts, t)
			}
		}
	}
	if texts == nil {
		return nil
	}
	s := strings.Join(texts, "")
	return &s
}

// itemMessage maps items[i]; ok is false for an item vLLM skips.
func itemMessage(req Request, opts Options, items []gjson.Result, calls *callIndex, i int) (Message, bool, error) {
	it, param := items[i], itemParam(req, i)
	switch typ := calls.types[i]; typ {
	case "message":
		return messageItem(it, param, opts)
	case "reasoning":
		c, _ := field(it, "content")
		if !c.IsArray() || len(c.Array()) == 0 {
			return Message{}, false, nil
		}
		var texts []string
		for j, p := range c.Array() {
			t, ok := fieldString(p, "text")
			if !ok {
				return Message{}, false, invalid(fmt.Sprintf("%s.content[%d].text", param, j), "must be a string")
			}
			texts = append(texts, t)
		}
		return Message{Role: RoleAssistant, Channel: ChannelAnalysis, Parts: []string{strings.Join(texts, "\n")}}, true, nil
	case "function_call":
		name, ok := fieldString(it, "name")
		if !ok {
			return Message{}, false, invalid(param+".name", "must be a string")
		}
		args, ok := fieldString(it, "arguments")
		if !ok {
			return Message{}, false, invalid(param+".arguments", "must be a string")
		}
		return Message{Role: RoleAssistant, Channel: ChannelCommentary, Recipient: "functions." + name, ContentType: "json", Parts: []string{args}}, true, nil
	case "function_call_output":
		id, ok := fieldString(it, "call_id")
		if !ok {
			return Message{}, false, invalid(param+".call_id", "must be a string")
		}
		name, found := calls.name(i, id)
		if !found {
			return Message{}, false, invalid(param+".call_id", "no function_call with call_id %q precedes this output", id)
		}
		out, err := outputText(it, param)
		if err != nil {
			return Message{}, false, err
		}
		return Message{Role: RoleTool, Name: "functions." + name, Recipient: "assistant", Channel: ChannelCommentary, Parts: []string{out}}, true, nil
	default:
		return Message{}, false, unsupported(param+".type", "item type %q is not supported for gpt-oss", typ)
	}
}

// callIndex holds each item's type and call_id, and a function call's name, read once: an
// output's call is looked up among the items before it, and reading them again per output made
// the mapping cost outputs × items field reads.
type callIndex struct {
	types   []string
	callIDs []string // function_call and function_call_output items
	fns     []string // function_call items
}

func newCallIndex(items []gjson.Result, cached []*cachedItem) *callIndex {
	c := &callIndex{types: make([]string, len(items)), callIDs: make([]string, len(items)), fns: make([]string, len(items))}
	for j, it := range items {
		if ci := cached[j]; ci != nil {
			c.types[j], c.callIDs[j], c.fns[j] = ci.typ, ci.callID, ci.name
			continue
		}
		c.types[j] = itemType(it)
		switch c.types[j] {
		case "function_call":
			c.callIDs[j], _ = fieldString(it, "call_id")
			c.fns[j], _ = fieldString(it, "name")
		case "function_call_output":
			c.callIDs[j], _ = fieldString(it, "call_id")
		}
	}
	return c
}

// cachedMessage is item i's message from its cache entry (ok: it makes one); hit is false
// without an entry, and for an output whose call the conversation lacks before it (reading the
// item then gives the error): an output's message takes the name of its call.
func cachedMessage(ci *cachedItem, calls *callIndex, i int) (m Message, ok, hit bool) {
	if ci == nil {
		return Message{}, false, false
	}
	if ci.typ != "function_call_output" {
		return ci.msg, ci.ok, true
	}
	name, found := calls.name(i, ci.callID)
	if !found {
		return Message{}, false, false
	}
	m = ci.msg
	m.Name = "functions." + name
	return m, true, true
}

// cacheable is the cache entry of item i, mapped to m (ok: it made one), or nil when the
// mapping depends on more than the item's bytes: a system or developer message (the
// deployment's InstructionsInSystem), or a message item that made none.
func cacheable(calls *callIndex, i int, m Message, ok bool) *cachedItem {
	ci := &cachedItem{typ: calls.types[i], msg: m, ok: ok}
	switch ci.typ {
	case "message":
		if !ok || m.Role == RoleSystem || m.Role == RoleDeveloper {
			return nil
		}
	case "function_call":
		ci.callID, ci.name = calls.callIDs[i], calls.fns[i]
	case "function_call_output":
		if !ok {
			return nil
		}
		ci.msg.Name = ""
		ci.callID = calls.callIDs[i]
	case "reasoning":
	default:
		return nil
	}
	return ci
}

// name is the name of the latest function_call before item i with call_id id.
func (c *callIndex) name(i int, id string) (string, bool) {
	for j := i - 1; j >= 0; j-- {
		if c.types[j] == "function_call" && c.callIDs[j] == id {
			return c.fns[j], true
		}
	}
	return "", false
}

// outputText is a function_call_output's output: a string, or (a stitch extension; vLLM accepts
// only strings here) the texts of input_text parts joined with nothing.
func outputText(it gjson.Result, param string) (string, error) {
	out, _ := field(it, "output")
	if out.Type == gjson.String {
		return out.Str, nil
	}
	if !out.IsArray() {
		return "", invalid(param+".output", "must be a string or an array of content parts")
	}
	var b strings.Builder
	for j, p := range out.Array() {
		t, err := partText(p, fmt.Sprintf("%s.output[%d]", param, j))
		if err != nil {
			return "", err
		}
		b.WriteString(t)
	}
	return b.String(), nil
}

func messageItem(it gjson.Result, param string, opts Options) (Message, bool, error) {
	role, ok := fieldString(it, "role")
	if !ok {
		return Message{}, false, invalid(param+".role", "must be a string")
	}
	content, _ := field(it, "content")
	switch role {
	case "system", "developer":
		text := flattenText(content)
		if text == nil || *text == "" {
			return Message{}, false, nil
		}
		if opts.InstructionsInSystem {
			if role == "system" {
				return systemMessage(opts, "", text), true, nil
			}
			// vLLM's get_developer_message drops instructions in this mode, so a developer
			// item renders as an empty developer message.
			return Message{Role: RoleDeveloper, Developer: &DeveloperContent{}}, true, nil
		}
		return Message{Role: RoleDeveloper, Developer: &DeveloperContent{Instructions: text}}, true, nil
	case "user", "assistant":
	default:
		return Message{}, false, invalid(param+".role", "unknown role %q", role)
	}
	m := Message{Role: Role(role)}
	if role == "assistant" {
		m.Channel = ChannelFinal
	}
	switch {
	case content.Type == gjson.String:
		m.Parts = []string{content.Str}
	case content.IsArray():
		for j, p := range content.Array() {
			t, err := partText(p, fmt.Sprintf("%s.content[%d]", param, j))
			if err != nil {
				return Message{}, false, err
			}
			m.Parts = append(m.Parts, t)
		}
	default:
		return Message{}, false, invalid(param+".content", "must be a string or an array of content parts")
	}
	return m, true, nil
}

// partText is a content part's text as vLLM takes it (part.get("text", "")): text parts give
// their text, refusals "" (vLLM's TODO); images, files and audio are not supported.
func partText(p gjson.Result, param string) (string, error) {
	if !p.IsObject() {
		return "", invalid(param, "must be an object")
	}
	typ, _ := fieldString(p, "type")
	switch typ {
	case "input_text", "output_text", "text", "summary_text", "reasoning_text":
		t, ok := fieldString(p, "text")
		if !ok {
			return "", invalid(param+".text", "must be a string")
		}
		return t, nil
	case "refusal":
		return "", nil
	case "input_image", "input_file", "input_audio":
		return "", unsupported(param+".type", "%s content is not supported for gpt-oss", typ)
	}
	return "", invalid(param+".type", "unknown content part type %q", typ)
}

// depth returns the deepest nesting of arrays and objects in raw JSON (strings skipped).
func depth(raw []byte) int {
	d, deepest := 0, 0
	inString := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			d++
			deepest = max(deepest, d)
		case '}', ']':
			d--
		}
	}
	return deepest
}
