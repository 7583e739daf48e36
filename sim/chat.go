package sim

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/tidwall/gjson"
)

// handleChatCompletions serves POST /v1/chat/completions for pass-through tests: the messages are
// rendered with the model's template, then generated like a completion. Without a tool or
// reasoning parser (as vLLM runs unless told otherwise) the whole output is message content.
func (s *Server) handleChatCompletions(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	body, aerr := readBody(r)
	var lora string
	if aerr == nil {
		lora, aerr = s.checkModel(gjson.GetBytes(body, "model").String())
	}
	var sp sampling
	if aerr == nil {
		sp, aerr = s.parseSampling(body, -1, "max_completion_tokens", "max_tokens")
	}
	var prompt []uint32
	if aerr == nil {
		prompt, aerr = s.renderChat(r, body)
	}
	var p genParams
	if aerr == nil {
		p, aerr = s.genParamsFor(sp, prompt, "/v1/chat/completions")
		p.lora = lora
	}
	if aerr != nil {
		s.metrics.errors.WithLabelValues(strconv.Itoa(aerr.status)).Inc()
		s.writeError(w, aerr)
		return
	}
	if !s.preflight(ctx, w) {
		return
	}
	hdr := respHeader{id: newID("chatcmpl-"), model: s.opts.ServedModelName, created: time.Now().Unix()}
	if sp.stream {
		hdr.object = "chat.completion.chunk"
		s.streamChat(ctx, w, &hdr, sp, p)
		return
	}
	hdr.object = "chat.completion"
	g, u, err := s.runToEnd(ctx, p)
	if err != nil {
		return
	}
	b := hdr.append(nil)
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	b = appendJSONString(b, g.text.String())
	b = append(b, `,"refusal":null,"annotations":null,"audio":null,"function_call":null,"tool_calls":[],"reasoning_content":null},"logprobs":null,"finish_reason":`...)
	b = appendNullableString(b, g.finish)
	b = append(b, `,"stop_reason":`...)
	b = appendStopReason(b, g.stopReason)
	b = append(b, `,"token_ids":`...)
	b = appendIDsIf(b, sp.returnTokenIDs, nonNil(g.out))
	b = append(b, `}],"service_tier":null,"system_fingerprint":null,"usage":`...)
	b = appendUsage(b, u, s.finalDetails())
	b = append(b, `,"prompt_logprobs":null,"prompt_token_ids":`...)
	b = appendIDsIf(b, sp.returnTokenIDs, p.prompt)
	b = append(b, `,"kv_transfer_params":null}`...)
	writeJSON(w, http.StatusOK, b)
}

func (s *Server) streamChat(ctx context.Context, w http.ResponseWriter, hdr *respHeader, sp sampling, p genParams) {
	sw := newSSEWriter(w)
	g := s.startGeneration(p)
	defer s.logRequest(ctx, g)
	defer g.end()
	// First chunk: the role, with the prompt ids at the top level.
	err := sw.event(func(dst []byte) []byte {
		dst = hdr.append(dst)
		dst = append(dst, `,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]`...)
		dst = append(dst, s.chunkUsageNull()...)
		dst = append(dst, `,"prompt_token_ids":`...)
		dst = appendIDsIf(dst, sp.returnTokenIDs, p.prompt)
		return append(dst, '}')
	})
	for err == nil && g.finish == "" {
		if g.dropNow() {
			s.abortConnection(sw)
		}
		var id uint32
		var text string
		if id, text, err = g.next(ctx); err != nil {
			return
		}
		err = sw.event(func(dst []byte) []byte {
			dst = hdr.append(dst)
			dst = append(dst, `,"choices":[{"index":0,"delta":{"content":`...)
			dst = appendJSONString(dst, text)
			dst = append(dst, `},"logprobs":null,"finish_reason":`...)
			dst = appendNullableString(dst, g.finish)
			dst = append(dst, `,"stop_reason":`...)
			dst = appendStopReason(dst, g.stopReason)
			dst = append(dst, `,"token_ids":`...)
			dst = appendIDsIf(dst, sp.returnTokenIDs, []uint32{id})
			dst = append(dst, "}]"...)
			dst = append(dst, s.chunkUsageNull()...)
			return append(dst, '}')
		})
	}
	if err != nil {
		return
	}
	if sp.includeUsage {
		sw.event(func(dst []byte) []byte { //nolint:errcheck // a gone client is seen by the next write
			dst = hdr.append(dst)
			dst = append(dst, `,"choices":[],"usage":`...)
			dst = appendUsage(dst, g.usage(), s.finalDetails())
			return append(dst, '}')
		})
	}
	sw.done() //nolint:errcheck // nothing follows
}

// appendIDsIf appends ids when ok, else null.
func appendIDsIf(dst []byte, ok bool, ids []uint32) []byte {
	if !ok {
		return append(dst, "null"...)
	}
	return appendIDs(dst, ids)
}
