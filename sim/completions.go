package sim

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// defaultMaxTokens is vLLM's max_tokens default on /v1/completions.
const defaultMaxTokens = 16

// sseWriter writes server-sent events and flushes each one.
type sseWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf []byte
	err error
}

func newSSEWriter(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	sw := &sseWriter{w: w, rc: http.NewResponseController(w)}
	sw.err = sw.rc.Flush()
	return sw
}

// event writes "data: <payload>\n\n". payload is appended to by fill, using the writer's buffer.
func (sw *sseWriter) event(fill func(dst []byte) []byte) error {
	if sw.err != nil {
		return sw.err
	}
	sw.buf = append(sw.buf[:0], "data: "...)
	sw.buf = fill(sw.buf)
	sw.buf = append(sw.buf, '\n', '\n')
	if _, err := sw.w.Write(sw.buf); err != nil {
		sw.err = err
		return err
	}
	sw.err = sw.rc.Flush()
	return sw.err
}

func (sw *sseWriter) done() error {
	return sw.event(func(dst []byte) []byte { return append(dst, "[DONE]"...) })
}

// preflight applies the request-level faults: the first-byte delay and the failure rate. It
// reports whether the handler should go on.
func (s *Server) preflight(ctx context.Context, w http.ResponseWriter) bool {
	if d := s.opts.FirstByteDelay; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
	if s.opts.FailRate > 0 && s.faultDraw() < s.opts.FailRate {
		s.metrics.faults.WithLabelValues("fail").Inc()
		s.writeError(w, &apiError{status: http.StatusInternalServerError, typ: "InternalServerError",
			message: "simulated failure (--fail-rate)"})
		return false
	}
	return true
}

// abortConnection cuts the connection without a proper end of response (the drop fault):
// net/http recovers http.ErrAbortHandler silently and closes the connection.
func (s *Server) abortConnection(sw *sseWriter) {
	s.metrics.faults.WithLabelValues("drop").Inc()
	if sw != nil {
		sw.rc.Flush() //nolint:errcheck // best effort: what was written goes out first
	}
	panic(http.ErrAbortHandler)
}

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	body, aerr := readBody(r)
	var lora string
	if aerr == nil {
		lora, aerr = s.checkModel(gjson.GetBytes(body, "model").String())
	}
	var sp sampling
	if aerr == nil {
		sp, aerr = s.parseSampling(body, defaultMaxTokens, "max_tokens")
	}
	if aerr == nil {
		aerr = sp.parseLogprobs(body)
	}
	var prompts [][]uint32
	if aerr == nil {
		prompts, aerr = s.parsePrompts(body)
	}
	params := make([]genParams, len(prompts))
	for i := 0; aerr == nil && i < len(prompts); i++ {
		params[i], aerr = s.genParamsFor(sp, prompts[i], "/v1/completions")
		params[i].lora = lora
	}
	if aerr != nil {
		s.metrics.errors.WithLabelValues(strconv.Itoa(aerr.status)).Inc()
		s.writeError(w, aerr)
		return
	}
	if !s.preflight(ctx, w) {
		return
	}
	hdr := respHeader{id: newID("cmpl-"), object: "text_completion", model: s.opts.ServedModelName, created: time.Now().Unix()}
	if sp.stream {
		s.streamCompletions(ctx, w, &hdr, sp, params)
		return
	}
	s.completeCompletions(ctx, w, &hdr, sp, params)
}

// streamCompletions runs the prompts one after the other, each choice's chunks in order.
func (s *Server) streamCompletions(ctx context.Context, w http.ResponseWriter, hdr *respHeader, sp sampling, params []genParams) {
	sw := newSSEWriter(w)
	var total usage
	for i, p := range params {
		u, err := s.streamChoice(ctx, sw, hdr, sp, i, p)
		total.add(u)
		if err != nil {
			return
		}
	}
	if sp.includeUsage {
		sw.event(func(dst []byte) []byte { //nolint:errcheck // a gone client is seen by the next write
			dst = hdr.append(dst)
			dst = append(dst, `,"choices":[],"usage":`...)
			dst = appendUsage(dst, total, s.finalDetails())
			return append(dst, '}')
		})
	}
	sw.done() //nolint:errcheck // nothing follows
}

func (s *Server) streamChoice(ctx context.Context, sw *sseWriter, hdr *respHeader, sp sampling, index int, p genParams) (usage, error) {
	g := s.startGeneration(p)
	defer s.logRequest(ctx, g)
	defer g.end()
	interval := s.opts.StreamInterval
	var ids []uint32
	var text string
	sentFirst := false
	textOff := 0 // text_offset of the next token's logprobs
	for g.finish == "" {
		if g.dropNow() {
			s.abortConnection(sw)
		}
		id, t, err := g.next(ctx)
		if err != nil {
			return g.usage(), err
		}
		ids, text = append(ids, id), text+t
		// vLLM's --stream-interval: the first output at once, then every interval ids, and the last.
		if sentFirst && len(ids) < interval && g.finish == "" {
			continue
		}
		first := !sentFirst
		sentFirst = true
		err = sw.event(func(dst []byte) []byte {
			dst = hdr.append(dst)
			dst = append(dst, `,"choices":[{"index":`...)
			dst = strconv.AppendInt(dst, int64(index), 10)
			dst = append(dst, `,"text":`...)
			dst = appendJSONString(dst, text)
			dst = append(dst, `,"logprobs":`...)
			if p.logprobs >= 0 {
				dst = s.appendCompletionLogprobs(dst, g.logprobsOf(len(g.out)-len(ids), len(g.out)), textOff, p.tokensAsIDs)
			} else {
				dst = append(dst, "null"...)
			}
			dst = append(dst, `,"finish_reason":`...)
			dst = appendNullableString(dst, g.finish)
			dst = append(dst, `,"stop_reason":`...)
			dst = appendStopReason(dst, g.stopReason)
			dst = append(dst, `,"prompt_token_ids":`...)
			if sp.returnTokenIDs && first {
				dst = appendIDs(dst, p.prompt)
			} else {
				dst = append(dst, "null"...)
			}
			dst = append(dst, `,"token_ids":`...)
			if sp.returnTokenIDs {
				dst = appendIDs(dst, ids)
			} else {
				dst = append(dst, "null"...)
			}
			dst = append(dst, `}]`...)
			if sp.continuousUsage {
				// vLLM's per-chunk usage carries no prompt_tokens_details.
				d := detailsOmitted
				if s.opts.legacy() {
					d = detailsNullWhenZero
				}
				dst = append(dst, `,"usage":`...)
				dst = appendUsage(dst, usage{prompt: len(p.prompt), completion: len(g.out)}, d)
			} else {
				dst = append(dst, s.chunkUsageNull()...)
			}
			return append(dst, '}')
		})
		textOff += utf8.RuneCountInString(text)
		ids, text = ids[:0], ""
		if err != nil {
			return g.usage(), err // end() marks an unfinished request as aborted
		}
	}
	return g.usage(), nil
}

// completeCompletions answers a non-stream request once every prompt is done.
func (s *Server) completeCompletions(ctx context.Context, w http.ResponseWriter, hdr *respHeader, sp sampling, params []genParams) {
	type choice struct {
		text       string
		finish     string
		stopReason any
		ids        []uint32
		prompt     []uint32
		logprobs   []tokenLogprobs
		lpOn       bool
		asIDs      bool
	}
	choices := make([]choice, 0, len(params))
	var total usage
	for _, p := range params {
		c, u, err := s.runToEnd(ctx, p)
		if err != nil {
			return // the client is gone
		}
		total.add(u)
		ch := choice{text: c.text.String(), finish: c.finish, stopReason: c.stopReason, ids: c.out, prompt: p.prompt}
		if p.logprobs >= 0 {
			ch.logprobs, ch.lpOn, ch.asIDs = c.logprobsOf(0, len(c.out)), true, p.tokensAsIDs
		}
		choices = append(choices, ch)
	}
	b := hdr.append(nil)
	b = append(b, `,"choices":[`...)
	for i, c := range choices {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"text":`...)
		b = appendJSONString(b, c.text)
		b = append(b, `,"logprobs":`...)
		if c.lpOn {
			b = s.appendCompletionLogprobs(b, c.logprobs, 0, c.asIDs)
		} else {
			b = append(b, "null"...)
		}
		b = append(b, `,"finish_reason":`...)
		b = appendNullableString(b, c.finish)
		b = append(b, `,"stop_reason":`...)
		b = appendStopReason(b, c.stopReason)
		b = append(b, `,"token_ids":`...)
		if sp.returnTokenIDs {
			b = appendIDs(b, nonNil(c.ids))
		} else {
			b = append(b, "null"...)
		}
		b = append(b, `,"prompt_logprobs":null,"prompt_token_ids":`...)
		if sp.returnTokenIDs {
			b = appendIDs(b, c.prompt)
		} else {
			b = append(b, "null"...)
		}
		if !s.opts.legacy() {
			b = append(b, `,"routed_experts":null`...) // newest CompletionResponseChoice
		}
		b = append(b, '}')
	}
	b = append(b, `],"service_tier":null,"system_fingerprint":null,"usage":`...)
	b = appendUsage(b, total, s.finalDetails())
	b = append(b, `,"kv_transfer_params":null`...)
	if !s.opts.legacy() {
		// Newest CompletionResponse (serialized with model_dump: unset fields stay as null).
		b = append(b, `,"ec_transfer_params":null,"metrics":null`...)
	}
	b = append(b, '}')
	writeJSON(w, http.StatusOK, b)
}

// runToEnd generates p completely (non-stream). The returned generation is already ended.
func (s *Server) runToEnd(ctx context.Context, p genParams) (*generation, usage, error) {
	g := s.startGeneration(p)
	defer s.logRequest(ctx, g)
	defer g.end()
	for g.finish == "" {
		if g.dropNow() {
			s.abortConnection(nil)
		}
		if _, _, err := g.next(ctx); err != nil {
			return g, g.usage(), err
		}
	}
	return g, g.usage(), nil
}

// usage returns the generation's token counts so far.
func (g *generation) usage() usage {
	return usage{prompt: len(g.p.prompt), completion: len(g.out), cached: g.cached}
}

func nonNil(ids []uint32) []uint32 {
	if ids == nil {
		return []uint32{}
	}
	return ids
}

// logRequest writes the one Info line of a finished generation.
func (s *Server) logRequest(ctx context.Context, g *generation) {
	ttft := time.Duration(0)
	if !g.firstAt.IsZero() {
		ttft = g.firstAt.Sub(g.start)
	}
	s.opts.Logger.LogAttrs(ctx, slog.LevelInfo, "generation",
		slog.String("endpoint", g.p.endpoint),
		slog.String("finish_reason", g.finish),
		slog.Int("prompt_tokens", len(g.p.prompt)),
		slog.Int("cached_tokens", g.cached),
		slog.Int("completion_tokens", len(g.out)),
		slog.Float64("ttft_ms", float64(ttft.Microseconds())/1000),
	)
}
