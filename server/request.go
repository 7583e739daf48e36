package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/stitchllm/stitch/internal/jsonappend"
)

// request is a validated POST /v1/responses body. Fields that reach the chat template or vLLM keep
// their original JSON (order and number spelling) as raw bytes.
type request struct {
	Model              string
	Input              []json.RawMessage // normalized items, each with "type" and "id"
	InputIDs           []string          // Input[i]'s id, as parsed (inputID reads it)
	Instructions       *string
	PreviousResponseID string
	Stream             bool
	Store              bool
	Tools              json.RawMessage // the Responses tools array as sent ([] or absent → nil)
	ToolChoice         toolChoice
	ParallelToolCalls  bool
	MaxOutputTokens    int // 0: not set
	Temperature        json.RawMessage
	TopP               json.RawMessage
	ReasoningEffort    string // "" when absent
	ReasoningJSON      json.RawMessage
	TextJSON           json.RawMessage // the "text" object as sent (format, verbosity)
	TextFormat         textFormat
	Truncation         string // "disabled" (default) or "auto"
	Metadata           json.RawMessage
	User               string
	// Echoed only (the response object carries them back as OpenAI does; fields.go: ignored).
	TopLogprobs                                   *int
	PromptCacheKey, SafetyIdentifier, ServiceTier string
	IncludeEncrypted                              bool // include contains "reasoning.encrypted_content"
	// MaxToolCalls bounds the function calls the response may make (-1: no bound); calls beyond
	// it are dropped by the output parser (toolpolicy.go).
	MaxToolCalls int
	// References are the indexes in Input of item_reference items, resolved to stored items later.
	References []int
	// Logprobs is the number of alternatives per message token (top_logprobs) when the response
	// carries logprobs, -1 when it does not (logprobs.go).
	Logprobs int
	// Background runs the response detached from the connection (background.go).
	Background bool
	// Conversation is the conversation the turn continues and is appended to (conversations.go).
	Conversation string
}

// toolChoice is the parsed tool_choice: mode auto / none / required, or a named function.
type toolChoice struct {
	Mode string // "auto", "none", "required", "function"
	Name string // for Mode "function"
	Raw  json.RawMessage
	// Allowed, for tool_choice allowed_tools, are the tools the model may see and call
	// (toolpolicy.go); nil: every tool.
	Allowed *allowedTools
}

// textFormat is text.format: "text" (default), "json_object" or "json_schema" with its schema.
type textFormat struct {
	Type   string
	Name   string
	Schema json.RawMessage
	Strict bool
}

// limits bound a request.
type limits struct {
	MaxInputItems int
}

// idSource makes new item ids ("msg_…", "fc_…").
type idSource func(prefix string) string

// parseRequest validates body and normalizes its input items. Errors are *APIError 400 with param.
func parseRequest(body []byte, lim limits, newID idSource) (*request, error) {
	if !gjson.ValidBytes(body) {
		return nil, badRequest("", "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)")
	}
	root := objectOf(gjson.ParseBytes(body))
	if !root.IsObject() {
		return nil, badRequest("", "The request body must be a JSON object.")
	}
	r := &request{Store: true, ParallelToolCalls: true, Truncation: "disabled", ToolChoice: toolChoice{Mode: "auto"}, MaxToolCalls: -1}

	model := root.Get("model")
	switch {
	case !model.Exists() || model.Type == gjson.Null:
		return nil, badRequest("model", "Missing required parameter: 'model'.")
	case model.Type != gjson.String || model.Str == "":
		return nil, badRequest("model", "Invalid type for 'model': expected a non-empty string.")
	}
	r.Model = model.Str

	var err error
	if err := checkFields(root, createChecks); err != nil { // ignored and rejected fields (fields.go)
		return nil, err
	}
	if r.Logprobs, err = parseLogprobs(root); err != nil { // logprobs.go
		return nil, err
	}

	if r.Stream, err = optBool(root, "stream", false); err != nil {
		return nil, err
	}
	if r.Store, err = optBool(root, "store", true); err != nil {
		return nil, err
	}
	if r.ParallelToolCalls, err = optBool(root, "parallel_tool_calls", true); err != nil {
		return nil, err
	}
	if v := root.Get("instructions"); v.Exists() && v.Type != gjson.Null {
		if v.Type != gjson.String {
			return nil, badRequest("instructions", "Invalid type for 'instructions': expected a string.")
		}
		s := v.Str
		r.Instructions = &s
	}
	if v := root.Get("previous_response_id"); v.Exists() && v.Type != gjson.Null {
		if v.Type != gjson.String || v.Str == "" {
			return nil, badRequest("previous_response_id", "Invalid type for 'previous_response_id': expected a string.")
		}
		r.PreviousResponseID = v.Str
	}
	if err := parseBackground(root, r); err != nil { // background.go
		return nil, err
	}
	if err := parseConversation(root, r); err != nil { // conversations.go
		return nil, err
	}
	if v := root.Get("top_logprobs"); v.Type == gjson.Number { // parseLogprobs checked it
		n := int(v.Int())
		r.TopLogprobs = &n
	}
	// Str is "" for any other type (fields.go checked them).
	r.PromptCacheKey = root.Get("prompt_cache_key").Str
	r.SafetyIdentifier = root.Get("safety_identifier").Str
	r.ServiceTier = root.Get("service_tier").Str
	if v := root.Get("user"); v.Exists() && v.Type != gjson.Null {
		if v.Type != gjson.String {
			return nil, badRequest("user", "Invalid type for 'user': expected a string.")
		}
		r.User = v.Str
	}
	if v := root.Get("max_output_tokens"); v.Exists() && v.Type != gjson.Null {
		n, ok := positiveInt(v)
		if !ok {
			return nil, badRequest("max_output_tokens", "Invalid 'max_output_tokens': expected an integer of at least 1.")
		}
		r.MaxOutputTokens = n
	}
	if r.Temperature, err = optNumber(root, "temperature", 0, 2); err != nil {
		return nil, err
	}
	if r.TopP, err = optNumber(root, "top_p", 0, 1); err != nil {
		return nil, err
	}
	if err := parseReasoning(root, r); err != nil {
		return nil, err
	}
	if err := parseText(root, r); err != nil {
		return nil, err
	}
	if v := root.Get("truncation"); v.Exists() && v.Type != gjson.Null {
		if v.Type != gjson.String || (v.Str != "auto" && v.Str != "disabled") {
			return nil, badRequest("truncation", "Invalid value for 'truncation': expected 'auto' or 'disabled'.")
		}
		r.Truncation = v.Str
	}
	if err := parseMetadata(root, r); err != nil {
		return nil, err
	}
	if v := root.Get("include"); v.Exists() && v.Type != gjson.Null {
		if !v.IsArray() {
			return nil, badRequest("include", "Invalid type for 'include': expected an array of strings.")
		}
		enc, err := checkInclude(v.Array(), "include")
		if err != nil {
			return nil, err
		}
		r.IncludeEncrypted = enc
	}
	if v := root.Get("max_tool_calls"); v.Exists() && v.Type != gjson.Null {
		n, err := strconv.ParseInt(v.Raw, 10, 64)
		if v.Type != gjson.Number || err != nil || n < 0 || n > 1<<31 {
			return nil, badRequest("max_tool_calls", "Invalid 'max_tool_calls': expected a non-negative integer, but got %s instead.", v.Raw)
		}
		r.MaxToolCalls = int(n)
	}
	if v := root.Get("tools"); v.Exists() && v.Type != gjson.Null {
		if !v.IsArray() {
			return nil, badRequest("tools", "Invalid type for 'tools': expected an array.")
		}
		for i, t := range v.Array() {
			if !t.IsObject() || t.Get("type").Type != gjson.String {
				return nil, badRequest(fmt.Sprintf("tools[%d].type", i), "Missing required parameter: 'tools[%d].type'.", i)
			}
			if t.Get("type").Str == "function" && (t.Get("name").Type != gjson.String || t.Get("name").Str == "") {
				return nil, badRequest(fmt.Sprintf("tools[%d].name", i), "Missing required parameter: 'tools[%d].name'.", i)
			}
		}
		if len(v.Array()) > 0 {
			r.Tools = json.RawMessage(v.Raw)
		}
	}
	if err := parseToolChoice(root, r); err != nil {
		return nil, err
	}
	if err := parseInput(root, r, lim, newID); err != nil {
		return nil, err
	}
	return r, nil
}

func optBool(root jsonObject, key string, def bool) (bool, error) {
	v := root.Get(key)
	switch {
	case !v.Exists() || v.Type == gjson.Null:
		return def, nil
	case v.Type == gjson.True:
		return true, nil
	case v.Type == gjson.False:
		return false, nil
	}
	return false, badRequest(key, "Invalid type for '%s': expected a boolean, but got %s instead.", key, typeName(v))
}

func optNumber(root jsonObject, key string, lo, hi float64) (json.RawMessage, error) {
	v := root.Get(key)
	if !v.Exists() || v.Type == gjson.Null {
		return nil, nil
	}
	if v.Type != gjson.Number {
		return nil, badRequest(key, "Invalid type for '%s': expected a number, but got %s instead.", key, typeName(v))
	}
	if v.Num < lo || v.Num > hi {
		return nil, badRequest(key, "Invalid '%s': expected a value between %g and %g, but got %s instead.", key, lo, hi, v.Raw)
	}
	return json.RawMessage(v.Raw), nil
}

func positiveInt(v gjson.Result) (int, bool) {
	if v.Type != gjson.Number {
		return 0, false
	}
	n, err := strconv.ParseInt(v.Raw, 10, 64)
	if err != nil || n < 1 || n > 1<<31 {
		return 0, false
	}
	return int(n), true
}

func typeName(v gjson.Result) string {
	switch {
	case v.Type == gjson.String:
		return "a string"
	case v.Type == gjson.Number:
		return "a number"
	case v.Type == gjson.True || v.Type == gjson.False:
		return "a boolean"
	case v.Type == gjson.Null:
		return "null"
	case v.IsArray():
		return "an array"
	case v.IsObject():
		return "an object"
	}
	return "an unknown type"
}

func parseReasoning(root jsonObject, r *request) error {
	v := root.Get("reasoning")
	if !v.Exists() || v.Type == gjson.Null {
		return nil
	}
	if !v.IsObject() {
		return badRequest("reasoning", "Invalid type for 'reasoning': expected an object.")
	}
	r.ReasoningJSON = json.RawMessage(v.Raw)
	e := v.Get("effort")
	if !e.Exists() || e.Type == gjson.Null {
		return nil
	}
	switch e.Str {
	case "none", "minimal", "low", "medium", "high", "xhigh":
		r.ReasoningEffort = e.Str
		return nil
	}
	return badRequest("reasoning.effort", "Invalid value for 'reasoning.effort': expected one of 'none', 'minimal', 'low', 'medium', 'high'.")
}

func parseText(root jsonObject, r *request) error {
	r.TextFormat = textFormat{Type: "text"}
	v := root.Get("text")
	if !v.Exists() || v.Type == gjson.Null {
		return nil
	}
	if !v.IsObject() {
		return badRequest("text", "Invalid type for 'text': expected an object.")
	}
	r.TextJSON = json.RawMessage(v.Raw)
	f := v.Get("format")
	if !f.Exists() || f.Type == gjson.Null {
		return nil
	}
	switch t := f.Get("type").Str; t {
	case "text", "json_object":
		r.TextFormat.Type = t
	case "json_schema":
		schema := f.Get("schema")
		if !schema.IsObject() {
			return badRequest("text.format.schema", "Missing required parameter: 'text.format.schema'.")
		}
		if f.Get("name").Type != gjson.String {
			return badRequest("text.format.name", "Missing required parameter: 'text.format.name'.")
		}
		r.TextFormat = textFormat{Type: t, Name: f.Get("name").Str, Schema: json.RawMessage(schema.Raw), Strict: f.Get("strict").Bool()}
	default:
		return badRequest("text.format.type", "Invalid value for 'text.format.type': expected 'text', 'json_object' or 'json_schema'.")
	}
	return nil
}

func parseMetadata(root jsonObject, r *request) error {
	v := root.Get("metadata")
	if !v.Exists() || v.Type == gjson.Null {
		return nil
	}
	if !v.IsObject() {
		return badRequest("metadata", "Invalid type for 'metadata': expected an object.")
	}
	n := 0
	var err error
	v.ForEach(func(k, val gjson.Result) bool {
		n++
		switch {
		case n > 16:
			err = badRequest("metadata", "Invalid 'metadata': too many keys (at most 16).")
		case len(k.Str) > 64 && utf8.RuneCountInString(k.Str) > 64: // OpenAI counts characters, not bytes
			err = badRequest("metadata", "Invalid 'metadata': keys are at most 64 characters.")
		case val.Type != gjson.String:
			err = badRequest("metadata."+k.Str, "Invalid type for 'metadata.%s': expected a string.", k.Str)
		case len(val.Str) > 512 && utf8.RuneCountInString(val.Str) > 512:
			err = badRequest("metadata."+k.Str, "Invalid 'metadata.%s': values are at most 512 characters.", k.Str)
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	r.Metadata = json.RawMessage(v.Raw)
	return nil
}

func parseToolChoice(root jsonObject, r *request) error {
	v := root.Get("tool_choice")
	if !v.Exists() || v.Type == gjson.Null {
		return nil
	}
	r.ToolChoice.Raw = json.RawMessage(v.Raw)
	if v.Type == gjson.String {
		switch v.Str {
		case "auto", "none":
			r.ToolChoice.Mode = v.Str
			return nil
		case "required":
			// Nothing could satisfy it: the model would answer text under a "required" contract.
			if !hasFunctionTool(r.Tools, "") {
				return badRequest("tool_choice", "Invalid value for 'tool_choice': 'required' needs at least one function tool in 'tools'.")
			}
			r.ToolChoice.Mode = v.Str
			return nil
		}
		return badRequest("tool_choice", "Invalid value for 'tool_choice': expected 'auto', 'none', 'required' or a function.")
	}
	if !v.IsObject() {
		return badRequest("tool_choice", "Invalid type for 'tool_choice'.")
	}
	switch v.Get("type").Str {
	case "function":
		name := v.Get("name").Str
		if name == "" {
			return badRequest("tool_choice.name", "Missing required parameter: 'tool_choice.name'.")
		}
		if !hasFunctionTool(r.Tools, name) {
			return badRequest("tool_choice.name", "Tool choice '%s' not found in 'tools' parameter.", name)
		}
		r.ToolChoice.Mode, r.ToolChoice.Name = "function", name
		return nil
	case "allowed_tools":
		mode := v.Get("mode").Str
		if mode != "auto" && mode != "required" {
			return badRequest("tool_choice.mode", "Invalid value for 'tool_choice.mode': expected 'auto' or 'required'.")
		}
		allowed, err := parseAllowedTools(v.Get("tools"), r.Tools)
		if err != nil {
			return err
		}
		r.ToolChoice.Mode, r.ToolChoice.Allowed = mode, allowed
		return nil
	}
	return badRequest("tool_choice.type", "Unsupported tool_choice type %q: this server supports 'function'.", v.Get("type").Str)
}

// hasFunctionTool reports whether tools declare the function name ("": any function).
func hasFunctionTool(tools json.RawMessage, name string) bool {
	found := false
	eachFunctionTool(tools, func(f gjson.Result) bool {
		found = name == "" || f.Get("name").Str == name
		return !found
	})
	return found
}

// eachFunctionTool calls fn with each function of tools, top-level or inside a namespace (whose
// functions keep their own names), until fn returns false.
func eachFunctionTool(tools json.RawMessage, fn func(f gjson.Result) bool) {
	gjson.ParseBytes(tools).ForEach(func(_, t gjson.Result) bool {
		switch t.Get("type").Str {
		case "function":
			return fn(t)
		case "namespace":
			more := true
			t.Get("tools").ForEach(func(_, f gjson.Result) bool {
				more = fn(f)
				return more
			})
			return more
		}
		return true
	})
}

// knownItemTypes are the input item types stitch renders.
var knownItemTypes = map[string]string{
	"message":              "msg",
	"function_call":        "fc",
	"function_call_output": "fco",
	"reasoning":            "rs",
}

// parseInput turns input (a string or an array of items) into normalized items: every item gets
// "type" (messages may omit it) and an "id" (client ids are kept, as Codex and the Agents SDK replay them).
func parseInput(root jsonObject, r *request, lim limits, newID idSource) error {
	v := root.Get("input")
	switch {
	case !v.Exists() || v.Type == gjson.Null:
		if r.PreviousResponseID == "" {
			return badRequest("input", "Missing required parameter: 'input'.")
		}
		return nil
	case v.Type == gjson.String:
		id := newID("msg")
		item := fmt.Appendf(nil, `{"id":%q,"type":"message","role":"user","content":[{"type":"input_text","text":`, id)
		item = appendJSONString(item, v.Str)
		item = append(item, "}]}"...)
		r.Input, r.InputIDs = []json.RawMessage{item}, []string{id}
		return nil
	case !v.IsArray():
		return badRequest("input", "Invalid type for 'input': expected a string or an array of input items.")
	}
	items := v.Array()
	if len(items) == 0 {
		return badRequest("input", "Invalid 'input': empty array. Expected an array with minimum length 1, but got an empty array instead.")
	}
	if len(items) > lim.MaxInputItems {
		return badRequest("input", "Invalid 'input': too many items (%d; at most %d).", len(items), lim.MaxInputItems)
	}
	r.Input = make([]json.RawMessage, 0, len(items))
	r.InputIDs = make([]string, 0, len(items))
	for i, it := range items {
		param := fmt.Sprintf("input[%d]", i)
		if !it.IsObject() {
			return badRequest(param, "Invalid type for '%s': expected an object.", param)
		}
		if err := checkItemID(it.Get("id"), param); err != nil { // storable ids only (limits.go)
			return err
		}
		typ := it.Get("type")
		if !typ.Exists() || typ.Type == gjson.Null {
			if !it.Get("role").Exists() {
				return badRequest(param+".type", "Missing required parameter: '%s.type'.", param)
			}
			typ = gjson.Result{Type: gjson.String, Str: "message"}
		}
		prefix, ok := knownItemTypes[typ.Str]
		if !ok {
			if typ.Str == "item_reference" {
				// Resolved against the tenant's stored items once the tenant is known (resolveReferences).
				id := it.Get("id")
				if id.Type != gjson.String || id.Str == "" {
					return badRequest(param+".id", "Missing required parameter: '%s.id'.", param)
				}
				r.References = append(r.References, len(r.Input))
				r.Input = append(r.Input, json.RawMessage(it.Raw))
				r.InputIDs = append(r.InputIDs, id.Str)
				continue
			}
			return badRequest(param+".type", "Invalid value for '%s.type': %q is not a supported input item type.", param, typ.Str)
		}
		raw := []byte(it.Raw)
		var err error
		if !it.Get("type").Exists() {
			if raw, err = sjson.SetBytes(raw, "type", "message"); err != nil {
				return badRequest(param, "Invalid item: %v", err)
			}
		}
		id := it.Get("id").Str
		if idv := it.Get("id"); !idv.Exists() || idv.Type != gjson.String || idv.Str == "" {
			id = newID(prefix)
			if raw, err = sjson.SetBytes(raw, "id", id); err != nil {
				return badRequest(param, "Invalid item: %v", err)
			}
		}
		if typ.Str == "message" {
			switch role := it.Get("role").Str; role {
			case "user", "system", "developer", "assistant":
			default:
				return badRequest(param+".role", "Invalid value for '%s.role': expected one of 'user', 'system', 'developer' or 'assistant'.", param)
			}
		}
		r.Input = append(r.Input, bytes.Clone(raw))
		r.InputIDs = append(r.InputIDs, id)
	}
	return nil
}

// inputID returns Input[i]'s id: as parseInput recorded it, without scanning the item (whose id
// sjson appended at its end, past tens of kilobytes of a tool output), else read from the item.
func (r *request) inputID(i int) string {
	if len(r.InputIDs) == len(r.Input) {
		return r.InputIDs[i]
	}
	return itemID(r.Input[i])
}

func appendJSONString(dst []byte, s string) []byte { return jsonappend.String(dst, s) }
