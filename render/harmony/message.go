package harmony

import "encoding/json"

// Role is a Harmony author role.
type Role string

// Harmony roles.
const (
	RoleSystem    Role = "system"
	RoleDeveloper Role = "developer"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Harmony channels the gpt-oss encoding declares.
const (
	ChannelAnalysis   = "analysis"
	ChannelCommentary = "commentary"
	ChannelFinal      = "final"
)

// Effort is a reasoning effort the Harmony system message can state.
type Effort string

// Reasoning efforts. gpt-oss knows exactly these three; the system message says "medium" when a
// request names none (openai_harmony's SystemContent default).
const (
	EffortLow    Effort = "low"
	EffortMedium Effort = "medium"
	EffortHigh   Effort = "high"
)

// Message is one Harmony message: a header (author, recipient, channel, content type) and its
// content. A system message carries System, a developer message Developer, every other message
// Parts; a message holding more than one of them renders them in that order.
type Message struct {
	Role Role
	// Name is the author name. Tool messages are rendered by name alone (the author of a function
	// result is "functions.NAME"); for other roles a name renders as "role:name".
	Name string
	// Recipient is rendered as " to=RECIPIENT" ("" and "all" render nothing). An assistant message
	// with a recipient is a tool call and ends with <|call|> instead of <|end|>.
	Recipient string
	// Channel is rendered as "<|channel|>CHANNEL" when set.
	Channel string
	// ContentType is rendered as " TYPE" (vLLM writes "json" for function calls in history). A
	// type starting with "<|constrain|>" renders that marker as its special token.
	ContentType string
	// Parts are the text content parts, each encoded on its own as ordinary text.
	Parts []string
	// System is the content of the system message.
	System *SystemContent
	// Developer is the content of the developer message.
	Developer *DeveloperContent
}

// SystemContent is the Harmony system message content. Empty fields are not rendered.
type SystemContent struct {
	ModelIdentity   string
	KnowledgeCutoff string
	// StartDate is the conversation start date, "YYYY-MM-DD" ("Current date: …").
	StartDate string
	Effort    Effort
	// ValidChannels are listed on the "# Valid channels" line; none omits the line.
	ValidChannels []string
	// ChannelRequired adds "Channel must be included for every message."
	ChannelRequired bool
}

// DeveloperContent is the Harmony developer message content.
type DeveloperContent struct {
	// Instructions renders "# Instructions\n\n" and the text when non-nil (even if empty).
	Instructions *string
	// Tools are the `functions` namespace; none renders no tools section.
	Tools []ToolDescription
}

// ToolDescription is one function of the `functions` namespace.
type ToolDescription struct {
	Name        string
	Description string
	// Parameters is the raw JSON schema; nil renders `type NAME = () => any;`.
	Parameters json.RawMessage
}

// DefaultModelIdentity and DefaultKnowledgeCutoff are openai_harmony's SystemContent defaults,
// which vLLM keeps.
const (
	DefaultModelIdentity   = "You are ChatGPT, a large language model trained by OpenAI."
	DefaultKnowledgeCutoff = "2024-06"
)

// DefaultSystemContent returns openai_harmony's SystemContent.new(): the default identity and
// knowledge cutoff, medium effort, the three channels required, no date.
func DefaultSystemContent() SystemContent {
	return SystemContent{
		ModelIdentity:   DefaultModelIdentity,
		KnowledgeCutoff: DefaultKnowledgeCutoff,
		Effort:          EffortMedium,
		ValidChannels:   []string{ChannelAnalysis, ChannelCommentary, ChannelFinal},
		ChannelRequired: true,
	}
}
