package server

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// Every request field of the Responses API has one answer here (issue 18): it is honoured, it is
// rejected with a 400 naming it, or it is accepted and ignored for a stated reason. The user
// guide's compatibility table lists the same answers, and TestCompatibilityTable fails when a
// field of the openai-go SDK's request types is missing from it or answered differently.

// Answers a field can get.
const (
	honoured = "honoured"
	ignored  = "ignored"
	rejected = "rejected"
)

// fieldRule is the answer to one request field (dotted: "reasoning.summary").
type fieldRule struct {
	answer string
	// check validates an ignored field's value (nil: any value). A rejected field without check
	// refuses any non-null value that is not its no-op (false, an empty array); with one, check
	// decides.
	check func(v gjson.Result, param string) error
}

// The endpoints with request fields.
const (
	endpointCreate      = "POST /v1/responses"
	endpointRetrieve    = "GET /v1/responses/{id}"
	endpointInputItems  = "GET /v1/responses/{id}/input_items"
	endpointInputTokens = "POST /v1/responses/input_tokens"
)

// oneOf checks a string field against its allowed values.
func oneOf(values ...string) func(v gjson.Result, param string) error {
	return func(v gjson.Result, param string) error {
		if v.Type == gjson.String {
			for _, s := range values {
				if v.Str == s {
					return nil
				}
			}
		}
		return badRequest(param, "Invalid value for '%s': expected one of %s.", param, quoteList(values))
	}
}

func isString(v gjson.Result, param string) error {
	if v.Type != gjson.String {
		return badRequest(param, "Invalid type for '%s': expected a string, but got %s instead.", param, typeName(v))
	}
	return nil
}

func isBool(v gjson.Result, param string) error {
	if v.Type != gjson.True && v.Type != gjson.False {
		return badRequest(param, "Invalid type for '%s': expected a boolean, but got %s instead.", param, typeName(v))
	}
	return nil
}

func isObject(v gjson.Result, param string) error {
	if !v.IsObject() {
		return badRequest(param, "Invalid type for '%s': expected an object, but got %s instead.", param, typeName(v))
	}
	return nil
}

func quoteList(values []string) string {
	out := ""
	for i, s := range values {
		switch {
		case i == 0:
		case i == len(values)-1:
			out += " or "
		default:
			out += ", "
		}
		out += "'" + s + "'"
	}
	return out
}

// createFields answers every field of POST /v1/responses. Honoured fields are parsed by
// parseRequest itself; the ignored and rejected ones are checked by checkFields.
var createFields = map[string]fieldRule{
	"model":                {answer: honoured},
	"input":                {answer: honoured},
	"instructions":         {answer: honoured},
	"previous_response_id": {answer: honoured},
	"stream":               {answer: honoured},
	"store":                {answer: honoured},
	"tools":                {answer: honoured},
	"tool_choice":          {answer: honoured},
	"parallel_tool_calls":  {answer: honoured},
	"max_tool_calls":       {answer: honoured},
	"max_output_tokens":    {answer: honoured},
	"temperature":          {answer: honoured},
	"top_p":                {answer: honoured},
	"reasoning":            {answer: honoured},
	"reasoning.effort":     {answer: honoured},
	"text":                 {answer: honoured},
	"text.format":          {answer: honoured},
	"truncation":           {answer: honoured},
	"metadata":             {answer: honoured},
	"user":                 {answer: honoured},
	"include":              {answer: honoured},
	"top_logprobs":         {answer: honoured}, // logprobs.go

	"reasoning.summary":                  {answer: ignored, check: oneOf("auto", "concise", "detailed")},
	"reasoning.generate_summary":         {answer: ignored, check: oneOf("auto", "concise", "detailed")},
	"reasoning.context":                  {answer: ignored, check: oneOf("auto", "current_turn", "all_turns")},
	"reasoning.mode":                     {answer: ignored, check: isString},
	"text.verbosity":                     {answer: ignored, check: oneOf("low", "medium", "high")},
	"service_tier":                       {answer: ignored, check: oneOf("auto", "default", "flex", "scale", "priority")},
	"prompt_cache_key":                   {answer: ignored, check: isString},
	"prompt_cache_retention":             {answer: ignored, check: oneOf("in-memory", "in_memory", "24h")},
	"prompt_cache_options":               {answer: ignored, check: isObject},
	"safety_identifier":                  {answer: ignored, check: isString},
	"stream_options":                     {answer: ignored, check: isObject},
	"stream_options.include_obfuscation": {answer: ignored, check: isBool},

	// stitch starts a background response at once, which meets any completion window; the
	// continuation_id is a scheduling hint with no history (OpenAI: it adds none).
	"background_options":                   {answer: ignored, check: isObject},
	"background_options.completion_window": {answer: ignored, check: oneOf("soonest", "2h", "8h")},
	"background_options.continuation_id":   {answer: ignored, check: isString},

	"background":         {answer: honoured},
	"conversation":       {answer: honoured},
	"prompt":             {answer: rejected},
	"context_management": {answer: rejected},
	"moderation":         {answer: rejected},
	"access_programs":    {answer: rejected},
	"image":              {answer: rejected},
}

// rejectedWhy is the message of each rejected field.
var rejectedWhy = map[string]string{
	"prompt":             "Prompt templates ('prompt') are not supported by this server.",
	"context_management": "Server-side context management (compaction) is not supported by this server; use truncation 'auto'.",
	"moderation":         "Moderation is not supported by this server.",
	"access_programs":    "Access programs are not supported by this server.",
	"image":              "Image options are not supported by this server (it does not read images).",
}

// inputTokensFields answers every field of POST /v1/responses/input_tokens.
var inputTokensFields = map[string]fieldRule{
	"model":                {answer: honoured},
	"input":                {answer: honoured},
	"instructions":         {answer: honoured},
	"previous_response_id": {answer: honoured},
	"tools":                {answer: honoured},
	"tool_choice":          {answer: honoured},
	"parallel_tool_calls":  {answer: honoured},
	"reasoning":            {answer: honoured},
	"reasoning.effort":     {answer: honoured},
	"text":                 {answer: honoured},
	"text.format":          {answer: honoured},
	"truncation":           {answer: honoured},

	"reasoning.summary":          {answer: ignored},
	"reasoning.generate_summary": {answer: ignored},
	"reasoning.context":          {answer: ignored},
	"reasoning.mode":             {answer: ignored},
	"text.verbosity":             {answer: ignored},
	"personality":                {answer: ignored, check: isString},

	"conversation": {answer: honoured},
}

// retrieveFields answers the query parameters of GET /v1/responses/{id}.
var retrieveFields = map[string]fieldRule{
	"include":             {answer: ignored},
	"include_obfuscation": {answer: ignored},
	"starting_after":      {answer: honoured},
	"stream":              {answer: honoured},
}

// inputItemsFields answers the query parameters of GET /v1/responses/{id}/input_items.
var inputItemsFields = map[string]fieldRule{
	"after":   {answer: honoured},
	"limit":   {answer: honoured},
	"order":   {answer: honoured},
	"include": {answer: ignored},
}

// checkedField is one ignored or rejected field of a rules table, with the body member it sits
// under.
type checkedField struct {
	name, top string
	rule      fieldRule
}

// checkedFields lists the ignored and rejected fields of rules in name order (sortedKeys), built
// once per table rather than sorted again for every request.
func checkedFields(rules map[string]fieldRule) []checkedField {
	var out []checkedField
	for _, name := range sortedKeys(rules) {
		if rule := rules[name]; rule.answer != honoured {
			top, _, _ := strings.Cut(name, ".")
			out = append(out, checkedField{name: name, top: top, rule: rule})
		}
	}
	return out
}

// The checked fields of createFields and inputTokensFields (checkFields).
var (
	createChecks      = checkedFields(createFields)
	inputTokensChecks = checkedFields(inputTokensFields)
)

// checkFields answers the ignored and rejected fields of a request body (a table's checkedFields):
// a rejected field set to anything but null or its no-op value is a 400 naming it; an ignored one
// must still be well-typed.
func checkFields(root jsonObject, checks []checkedField) error {
	// The body's own members (jsonObject's index): most rules name fields a request does not send.
	present := root.members
	for _, f := range checks {
		name, rule := f.name, f.rule
		if _, ok := present[f.top]; !ok {
			continue // absent, so is every member under it
		}
		v := root.Get(name)
		if !v.Exists() || v.Type == gjson.Null {
			continue
		}
		switch rule.answer {
		case rejected:
			if rule.check != nil {
				if err := rule.check(v, name); err != nil {
					return err
				}
				continue
			}
			if v.Type == gjson.False || (v.IsArray() && len(v.Array()) == 0) {
				continue
			}
			why := rejectedWhy[name]
			if why == "" {
				why = fmt.Sprintf("The '%s' parameter is not supported by this server.", name)
			}
			return badRequest(name, "%s", why)
		case ignored:
			if rule.check != nil {
				if err := rule.check(v, name); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func sortedKeys(m map[string]fieldRule) []string {
	// Dotted children sort after their parents, so a parent's type error is reported first.
	return slices.Sorted(maps.Keys(m))
}

// includables are the values `include` accepts, and what stitch does with each.
var includables = map[string]string{
	"reasoning.encrypted_content": honoured,
	// The message text's logprobs, from vLLM (logprobs.go).
	"message.output_text.logprobs": honoured,
	// Hosted tools are never executed and images are not read: there is nothing to include.
	"file_search_call.results":              ignored,
	"web_search_call.results":               ignored,
	"web_search_call.action.sources":        ignored,
	"message.input_image.image_url":         ignored,
	"computer_call_output.output.image_url": ignored,
	"code_interpreter_call.outputs":         ignored,
}

// checkInclude validates an include list (a body's array, or a query's values) and reports
// whether it asks for reasoning.encrypted_content. param names the list ("include").
func checkInclude(values []gjson.Result, param string) (encrypted bool, err error) {
	for i, e := range values {
		p := param + "[" + strconv.Itoa(i) + "]"
		if e.Type != gjson.String {
			return false, badRequest(p, "Invalid type for '%s': expected a string, but got %s instead.", p, typeName(e))
		}
		switch includables[e.Str] {
		case honoured:
			encrypted = encrypted || e.Str == "reasoning.encrypted_content"
		case ignored:
		default:
			return false, badRequest(p, "Invalid value for '%s': '%s' is not a supported include value. Supported values are: %s.", p, e.Str, quoteList(includableNames()))
		}
	}
	return encrypted, nil
}

func includableNames() []string {
	return []string{"file_search_call.results", "web_search_call.results", "web_search_call.action.sources",
		"message.input_image.image_url", "computer_call_output.output.image_url", "code_interpreter_call.outputs",
		"reasoning.encrypted_content", "message.output_text.logprobs"}
}
