package sim

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/render"
)

// ModelRenderer adapts a loaded [render.Renderer] to [ChatRenderer]: it reads a chat request body as
// vLLM does (messages, tools, add_generation_prompt default true, continue_final_message,
// chat_template_kwargs, documents) and renders it with the model's chat template.
func ModelRenderer(m *render.Renderer) ChatRenderer {
	return ChatRendererFunc(func(_ context.Context, body []byte) (string, error) {
		req, err := ChatRequestFromBody(body)
		if err != nil {
			return "", err
		}
		return m.RenderText(req)
	})
}

// ChatRequestFromBody reads the template inputs of a /v1/chat/completions or /tokenize chat body
// with vLLM's defaults: add_generation_prompt true, continue_final_message false.
func ChatRequestFromBody(body []byte) (render.ChatRequest, error) {
	var req render.ChatRequest
	msgs := gjson.GetBytes(body, "messages")
	if !msgs.IsArray() {
		return req, fmt.Errorf("messages must be a list")
	}
	var err error
	if req.Messages, err = render.ParseChatMessages([]byte(msgs.Raw)); err != nil {
		return req, fmt.Errorf("parse messages: %w", err)
	}
	if tools := gjson.GetBytes(body, "tools"); tools.IsArray() {
		if req.Tools, err = render.ParseChatTools([]byte(tools.Raw)); err != nil {
			return req, fmt.Errorf("parse tools: %w", err)
		}
	}
	req.AddGenerationPrompt = true
	if v := gjson.GetBytes(body, "add_generation_prompt"); v.Exists() && v.Type != gjson.Null {
		req.AddGenerationPrompt = v.Bool()
	}
	req.ContinueFinalMessage = gjson.GetBytes(body, "continue_final_message").Bool()
	if req.ContinueFinalMessage && req.AddGenerationPrompt {
		return req, fmt.Errorf("cannot set both `continue_final_message` and `add_generation_prompt` to true")
	}
	if v := gjson.GetBytes(body, "chat_template_kwargs"); v.IsObject() {
		req.ChatTemplateKwargs = json.RawMessage(v.Raw)
	}
	if v := gjson.GetBytes(body, "documents"); v.IsArray() {
		req.Documents = json.RawMessage(v.Raw)
	}
	return req, nil
}
