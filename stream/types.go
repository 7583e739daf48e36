package stream

import (
	"encoding/json"
	"math"
	"strconv"
)

// Response status values (Response.Status).
const (
	StatusQueued     = "queued"
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusIncomplete = "incomplete"
	StatusFailed     = "failed"
)

// Output item types (Item.Type).
const (
	ItemMessage      = "message"
	ItemFunctionCall = "function_call"
	ItemReasoning    = "reasoning"
)

// Content part types (ContentPart.Type).
const (
	PartOutputText    = "output_text"
	PartReasoningText = "reasoning_text"
)

// Response is the OpenAI Responses API response object, as returned for
// stream:false and carried by response.created / in_progress / completed /
// incomplete / failed events. Field order and nullability follow OpenAI's
// object: nil pointers, empty strings of nullable fields and empty raw values
// marshal as null (or the documented default).
//
// Request-echo fields (Instructions … Metadata) are the caller's to fill,
// usually from the request; the [Emitter] fills ID, CreatedAt, Status, Error,
// IncompleteDetails, Output, Usage and CompletedAt.
type Response struct {
	ID                string             `json:"id"`         // "resp_…"
	CreatedAt         int64              `json:"created_at"` // Unix seconds
	Status            string             `json:"status"`     // Status* constant
	Background        bool               `json:"background"`
	CompletedAt       int64              `json:"completed_at"` // Unix seconds; 0 marshals as null
	Error             *ResponseError     `json:"error"`
	IncompleteDetails *IncompleteDetails `json:"incomplete_details"`
	// Instructions is the raw request instructions (a string, a list of input
	// items, or empty for null).
	Instructions       json.RawMessage `json:"instructions"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Model              string          `json:"model"`
	Output             []Item          `json:"output"`
	ParallelToolCalls  bool            `json:"parallel_tool_calls"`
	PreviousResponseID string          `json:"previous_response_id"` // "" marshals as null
	// Reasoning is the raw request reasoning config ({"effort":…,"summary":…});
	// empty marshals as null.
	Reasoning   json.RawMessage `json:"reasoning"`
	Store       bool            `json:"store"`
	Temperature *float64        `json:"temperature"`
	// Text is the raw text config; empty marshals as {"format":{"type":"text"}}.
	Text json.RawMessage `json:"text"`
	// ToolChoice is the raw tool_choice; empty marshals as "auto".
	ToolChoice json.RawMessage `json:"tool_choice"`
	// Tools is the raw tools array, order and spelling kept; empty marshals as [].
	Tools      json.RawMessage `json:"tools"`
	TopP       *float64        `json:"top_p"`
	Truncation string          `json:"truncation"` // "" marshals as "disabled"
	Usage      *ResponseUsage  `json:"usage"`
	User       string          `json:"user"` // "" marshals as null
	// Metadata is the raw metadata object; empty marshals as {}.
	Metadata json.RawMessage `json:"metadata"`
	// Conversation is the id of the conversation the response belongs to; "" omits the field.
	Conversation string `json:"conversation,omitempty"`
	// MaxToolCalls and TopLogprobs echo the request's (nil marshals as null).
	MaxToolCalls *int `json:"max_tool_calls"`
	TopLogprobs  *int `json:"top_logprobs"`
	// PromptCacheKey, SafetyIdentifier and ServiceTier echo the request's ("" marshals as null):
	// accepted and ignored (docs/user-guide.md), echoed as OpenAI echoes them.
	PromptCacheKey   string `json:"prompt_cache_key"`
	SafetyIdentifier string `json:"safety_identifier"`
	ServiceTier      string `json:"service_tier"`
}

// responseNullFields are the SDK's Response fields stitch has no value for (features it does
// not serve: prompts, images, moderation, cache diagnostics, tool usage, access programs):
// present and null, as the SDK types declare them nullable.
const responseNullFields = `,"access_programs":null,"image":null,"moderation":null,"prompt":null,"prompt_cache_diagnostics":null,"prompt_cache_options":null,"prompt_cache_retention":null,"tool_usage":null`

// ResponseError is Response.error for a failed response.
type ResponseError struct {
	Code    string `json:"code"` // e.g. "server_error"
	Message string `json:"message"`
}

// IncompleteDetails is Response.incomplete_details.
type IncompleteDetails struct {
	Reason string `json:"reason"` // ReasonMaxOutputTokens or ReasonMalformedToolCall
}

// Why a response ended incomplete (incomplete_details.reason).
const (
	// ReasonMaxOutputTokens: the token limit ended the output (vLLM's
	// finish_reason "length"); OpenAI's own reason.
	ReasonMaxOutputTokens = "max_output_tokens"
	// ReasonMalformedToolCall: the model broke a tool call after it began
	// (or stopped inside one), so that function_call item ended
	// "incomplete". OpenAI's models write calls under a grammar and never
	// do; this is stitch's reason for open-weight models that can (issue 16
	// item 2).
	ReasonMalformedToolCall = "malformed_tool_call"
)

// ResponseUsage is Response.usage.
type ResponseUsage struct {
	InputTokens         int                 `json:"input_tokens"`
	InputTokensDetails  InputTokensDetails  `json:"input_tokens_details"`
	OutputTokens        int                 `json:"output_tokens"`
	OutputTokensDetails OutputTokensDetails `json:"output_tokens_details"`
	TotalTokens         int                 `json:"total_tokens"`
}

// InputTokensDetails is ResponseUsage.input_tokens_details.
type InputTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// OutputTokensDetails is ResponseUsage.output_tokens_details.
type OutputTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// Item is one output item: a message, a function_call or a reasoning item
// (Type). Only the fields of its type are marshaled, in OpenAI's shape:
//
//	message:       id, type, status, role, content[{type:"output_text", annotations:[], logprobs:[], text}]
//	function_call: id, type, status, call_id, name, arguments
//	reasoning:     id, type, status, summary:[], content[{type:"reasoning_text", text}], encrypted_content (when set)
type Item struct {
	ID               string        `json:"id"`   // "msg_…", "fc_…", "rs_…"
	Type             string        `json:"type"` // Item* constant
	Status           string        `json:"status,omitempty"`
	Role             string        `json:"role,omitempty"` // message: "assistant"
	Content          []ContentPart `json:"content,omitempty"`
	CallID           string        `json:"call_id,omitempty"` // function_call: "call_…"
	Name             string        `json:"name,omitempty"`
	Arguments        string        `json:"arguments,omitempty"` // exact JSON text the model wrote
	Summary          []ContentPart `json:"summary,omitempty"`   // reasoning: always empty here
	EncryptedContent string        `json:"encrypted_content,omitempty"`
}

// ContentPart is one element of a message's or reasoning item's content.
type ContentPart struct {
	Type string `json:"type"` // PartOutputText or PartReasoningText
	Text string `json:"text"`
	// Logprobs are output_text's logprobs (include message.output_text.logprobs); nil
	// marshals as [].
	Logprobs []Logprob `json:"logprobs,omitempty"`
}

// Text returns the concatenated text of the item's content parts.
func (it *Item) Text() string {
	if len(it.Content) == 1 {
		return it.Content[0].Text
	}
	var s string
	for _, p := range it.Content {
		s += p.Text
	}
	return s
}

// MarshalJSON implements json.Marshaler (see AppendJSON).
func (it Item) MarshalJSON() ([]byte, error) { return it.AppendJSON(nil), nil }

// AppendJSON appends the item's JSON (OpenAI shape for its Type) to dst.
func (it *Item) AppendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	dst = appendKey(dst, "id")
	dst = appendString(dst, it.ID)
	dst = append(dst, ',')
	dst = appendKey(dst, "type")
	dst = appendString(dst, it.Type)
	if it.Status != "" {
		dst = append(dst, ',')
		dst = appendKey(dst, "status")
		dst = appendString(dst, it.Status)
	}
	switch it.Type {
	case ItemFunctionCall:
		dst = append(dst, `,"call_id":`...)
		dst = appendString(dst, it.CallID)
		dst = append(dst, `,"name":`...)
		dst = appendString(dst, it.Name)
		dst = append(dst, `,"arguments":`...)
		dst = appendString(dst, it.Arguments)
	case ItemReasoning:
		dst = append(dst, `,"summary":`...)
		dst = appendParts(dst, it.Summary)
		dst = append(dst, `,"content":`...)
		dst = appendParts(dst, it.Content)
		if it.EncryptedContent != "" {
			dst = append(dst, `,"encrypted_content":`...)
			dst = appendString(dst, it.EncryptedContent)
		}
	default:
		role := it.Role
		if role == "" {
			role = "assistant"
		}
		dst = append(dst, `,"role":`...)
		dst = appendString(dst, role)
		dst = append(dst, `,"content":`...)
		dst = appendParts(dst, it.Content)
	}
	return append(dst, '}')
}

func appendParts(dst []byte, parts []ContentPart) []byte {
	dst = append(dst, '[')
	for i := range parts {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = parts[i].AppendJSON(dst)
	}
	return append(dst, ']')
}

// MarshalJSON implements json.Marshaler (see AppendJSON).
func (p ContentPart) MarshalJSON() ([]byte, error) { return p.AppendJSON(nil), nil }

// AppendJSON appends the part's JSON; output_text parts carry empty
// annotations and logprobs arrays, as OpenAI sends them.
func (p *ContentPart) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"type":`...)
	dst = appendString(dst, p.Type)
	if p.Type == PartOutputText {
		dst = append(dst, `,"annotations":[],"logprobs":`...)
		dst = appendLogprobs(dst, p.Logprobs, true)
	}
	dst = append(dst, `,"text":`...)
	dst = appendString(dst, p.Text)
	return append(dst, '}')
}

// MarshalJSON implements json.Marshaler (see AppendJSON).
func (r Response) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }

// AppendJSON appends the response object's JSON to dst.
func (r *Response) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, r.ID)
	dst = append(dst, `,"object":"response","created_at":`...)
	dst = strconv.AppendInt(dst, r.CreatedAt, 10)
	dst = append(dst, `,"status":`...)
	dst = appendString(dst, r.Status)
	dst = append(dst, `,"background":`...)
	dst = strconv.AppendBool(dst, r.Background)
	dst = append(dst, `,"completed_at":`...)
	if r.CompletedAt != 0 {
		dst = strconv.AppendInt(dst, r.CompletedAt, 10)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"error":`...)
	if r.Error != nil {
		dst = append(dst, `{"code":`...)
		dst = appendString(dst, r.Error.Code)
		dst = append(dst, `,"message":`...)
		dst = appendString(dst, r.Error.Message)
		dst = append(dst, '}')
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"incomplete_details":`...)
	if r.IncompleteDetails != nil {
		dst = append(dst, `{"reason":`...)
		dst = appendString(dst, r.IncompleteDetails.Reason)
		dst = append(dst, '}')
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"instructions":`...)
	dst = appendRaw(dst, r.Instructions, "null")
	dst = append(dst, `,"max_output_tokens":`...)
	if r.MaxOutputTokens != nil {
		dst = appendInt(dst, *r.MaxOutputTokens)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"model":`...)
	dst = appendString(dst, r.Model)
	dst = append(dst, `,"output":[`...)
	for i := range r.Output {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = r.Output[i].AppendJSON(dst)
	}
	dst = append(dst, `],"parallel_tool_calls":`...)
	dst = strconv.AppendBool(dst, r.ParallelToolCalls)
	dst = append(dst, `,"previous_response_id":`...)
	dst = appendNullableString(dst, r.PreviousResponseID)
	if r.Conversation != "" {
		dst = append(dst, `,"conversation":{"id":`...)
		dst = appendString(dst, r.Conversation)
		dst = append(dst, '}')
	}
	dst = append(dst, `,"reasoning":`...)
	dst = appendRaw(dst, r.Reasoning, "null")
	dst = append(dst, `,"store":`...)
	dst = strconv.AppendBool(dst, r.Store)
	dst = append(dst, `,"temperature":`...)
	dst = appendFloat(dst, r.Temperature)
	dst = append(dst, `,"text":`...)
	dst = appendRaw(dst, r.Text, `{"format":{"type":"text"}}`)
	dst = append(dst, `,"tool_choice":`...)
	dst = appendRaw(dst, r.ToolChoice, `"auto"`)
	dst = append(dst, `,"tools":`...)
	dst = appendRaw(dst, r.Tools, `[]`)
	dst = append(dst, `,"top_p":`...)
	dst = appendFloat(dst, r.TopP)
	dst = append(dst, `,"truncation":`...)
	if r.Truncation == "" {
		dst = append(dst, `"disabled"`...)
	} else {
		dst = appendString(dst, r.Truncation)
	}
	dst = append(dst, `,"usage":`...)
	if u := r.Usage; u != nil {
		dst = append(dst, `{"input_tokens":`...)
		dst = appendInt(dst, u.InputTokens)
		dst = append(dst, `,"input_tokens_details":{"cached_tokens":`...)
		dst = appendInt(dst, u.InputTokensDetails.CachedTokens)
		dst = append(dst, `},"output_tokens":`...)
		dst = appendInt(dst, u.OutputTokens)
		dst = append(dst, `,"output_tokens_details":{"reasoning_tokens":`...)
		dst = appendInt(dst, u.OutputTokensDetails.ReasoningTokens)
		dst = append(dst, `},"total_tokens":`...)
		dst = appendInt(dst, u.TotalTokens)
		dst = append(dst, '}')
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"user":`...)
	dst = appendNullableString(dst, r.User)
	dst = append(dst, `,"metadata":`...)
	dst = appendRaw(dst, r.Metadata, `{}`)
	dst = append(dst, `,"max_tool_calls":`...)
	dst = appendNullableInt(dst, r.MaxToolCalls)
	dst = append(dst, `,"top_logprobs":`...)
	dst = appendNullableInt(dst, r.TopLogprobs)
	dst = append(dst, `,"prompt_cache_key":`...)
	dst = appendNullableString(dst, r.PromptCacheKey)
	dst = append(dst, `,"safety_identifier":`...)
	dst = appendNullableString(dst, r.SafetyIdentifier)
	dst = append(dst, `,"service_tier":`...)
	dst = appendNullableString(dst, r.ServiceTier)
	dst = append(dst, responseNullFields...)
	return append(dst, '}')
}

func appendNullableInt(dst []byte, n *int) []byte {
	if n == nil {
		return append(dst, "null"...)
	}
	return appendInt(dst, *n)
}

func appendNullableString(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, "null"...)
	}
	return appendString(dst, s)
}

func appendFloat(dst []byte, f *float64) []byte {
	if f == nil || math.IsNaN(*f) || math.IsInf(*f, 0) {
		return append(dst, "null"...)
	}
	return strconv.AppendFloat(dst, *f, 'g', -1, 64)
}
