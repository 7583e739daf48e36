package sim

import (
	"net/http"
	"strconv"

	"github.com/tidwall/gjson"
)

// errNoRenderer answers chat requests when no ChatRenderer is configured.
var errNoRenderer = &apiError{status: http.StatusNotImplemented, typ: "NotImplementedError",
	message: "chat templates are not available in this simulator (no renderer configured)"}

// handleTokenize serves POST /tokenize: the prompt form {prompt, add_special_tokens} and the chat
// form {messages, add_generation_prompt, tools, chat_template_kwargs, …} → {count, max_model_len,
// tokens, token_strs}.
func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	body, aerr := readBody(r)
	if aerr == nil {
		_, aerr = s.checkModel(gjson.GetBytes(body, "model").String())
	}
	var ids []uint32
	if aerr == nil {
		if gjson.GetBytes(body, "messages").Exists() {
			ids, aerr = s.renderChat(r, body)
		} else {
			p := gjson.GetBytes(body, "prompt")
			if p.Type != gjson.String {
				aerr = badRequest("prompt", "prompt must be a string")
			} else {
				// add_special_tokens adds nothing for the supported family (no BOS token).
				ids = s.tok.Encode(p.String())
			}
		}
	}
	if aerr != nil {
		s.writeError(w, aerr)
		return
	}
	b := []byte(`{"count":`)
	b = strconv.AppendInt(b, int64(len(ids)), 10)
	b = append(b, `,"max_model_len":`...)
	b = strconv.AppendInt(b, int64(s.opts.MaxModelLen), 10)
	b = append(b, `,"tokens":`...)
	b = appendIDs(b, nonNil(ids))
	b = append(b, `,"token_strs":null}`...)
	writeJSON(w, http.StatusOK, b)
}

// renderChat renders a chat request body with the configured renderer and tokenizes it.
func (s *Server) renderChat(r *http.Request, body []byte) ([]uint32, *apiError) {
	if s.opts.Renderer == nil {
		return nil, errNoRenderer
	}
	text, err := s.opts.Renderer.RenderChat(r.Context(), body)
	if err != nil {
		return nil, badRequest("messages", "%v", err)
	}
	return s.tok.Encode(text), nil
}

// handleDetokenize serves POST /detokenize: {tokens} → {prompt}, special tokens kept.
func (s *Server) handleDetokenize(w http.ResponseWriter, r *http.Request) {
	body, aerr := readBody(r)
	if aerr == nil {
		_, aerr = s.checkModel(gjson.GetBytes(body, "model").String())
	}
	var ids []uint32
	if aerr == nil {
		t := gjson.GetBytes(body, "tokens")
		if !t.IsArray() {
			aerr = badRequest("tokens", "tokens must be a list of token ids")
		} else {
			ids, aerr = s.tokenList(t)
		}
	}
	if aerr != nil {
		s.writeError(w, aerr)
		return
	}
	b := []byte(`{"prompt":`)
	b = appendJSONString(b, s.tok.Decode(ids))
	writeJSON(w, http.StatusOK, append(b, '}'))
}
