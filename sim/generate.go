package sim

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Finish reasons, as vLLM reports them.
const (
	finishStop   = "stop"
	finishLength = "length"
	finishAbort  = "abort"
)

// genParams is one prompt's generation request, validated.
type genParams struct {
	endpoint    string
	prompt      []uint32
	maxTokens   int
	stop        []string
	stopIDs     []uint32
	seed        int64
	salt        string
	lora        string // the LoRA adapter the request named ("" for the base model)
	ignoreEOS   bool
	skipSpecial bool
	// readCache is false when the request asked for prompt_logprobs, which bypasses prefix-cache
	// reads in vLLM.
	readCache bool
	// constraint is the structured-outputs constraint the answer satisfies.
	constraint constraint
	// logprobs is the number of alternatives reported per generated token, -1 for no logprobs;
	// tokensAsIDs writes their tokens as "token_id:N".
	logprobs    int
	tokensAsIDs bool
}

// generation is one running request: it owns its cache lease and emits the scripted tokens one at
// a time, applying stop conditions as vLLM's output processor does. Not safe for concurrent use.
type generation struct {
	s      *Server
	p      genParams
	lease  *lease
	cached int
	script []uint32 // the tokens the model will produce, end-of-sequence included
	drop   bool     // cut the connection after Options.DropAfter tokens

	out   []uint32        // ids emitted so far
	text  strings.Builder // detokenized text so far (after stop-string truncation)
	sent  int             // bytes of text already handed out
	dec   StreamDecoder
	timer *time.Timer
	start time.Time
	// firstAt is when the first token was emitted (zero before).
	firstAt time.Time
	finish  string
	// stopReason is the matched stop string (string) or stop token id (uint32); nil for EOS,
	// length and abort.
	stopReason any
	maxStop    int // longest stop string, in bytes
	lpSeed     uint64
}

// startGeneration looks the prompt up in the prefix cache, writes the script and draws faults.
// The caller must call end exactly once.
func (s *Server) startGeneration(p genParams) *generation {
	g := &generation{s: s, p: p, dec: newStreamDecoder(s.tok), start: time.Now()}
	g.lease, g.cached = s.cache.acquire(cacheKey{lora: p.lora, salt: p.salt}, p.prompt, p.readCache)
	for _, st := range p.stop {
		g.maxStop = max(g.maxStop, len(st))
	}
	r := modelRand(p.seed, p.prompt)
	decoded := s.tok.Decode(p.prompt)
	text, end := s.model.answer(decoded, r)
	if p.constraint.kind != "" {
		conv := s.model.dialect.parse(decoded)
		text = applyConstraint(text, p.constraint, r, conv.lastUserText())
	}
	g.script = s.tok.Encode(text)
	if s.opts.Drift > 0 && r.Float64() < s.opts.Drift {
		g.script, _ = drift(s.tok, g.script, r)
	}
	switch end {
	case endChat:
		g.script = append(g.script, s.imEnd)
	case endCall:
		g.script = append(g.script, s.callEnd)
	default:
		g.script = append(g.script, s.endOfText)
	}
	if p.ignoreEOS && len(g.script) < p.maxTokens {
		var b strings.Builder
		s.model.prose.write(&b, r, p.maxTokens-len(g.script))
		g.script = append(g.script, s.tok.Encode(b.String())...)
	}
	if p.logprobs >= 0 {
		g.lpSeed = logprobSeed(p.seed, p.prompt)
	}
	g.drop = s.opts.DropRate > 0 && s.faultDraw() < s.opts.DropRate
	s.metrics.running.Add(1)
	return g
}

// prefillDelay is the modelled time to first token.
func (g *generation) prefillDelay() time.Duration {
	return g.s.opts.TTFTBase + time.Duration(len(g.p.prompt)-g.cached)*g.s.opts.PrefillPerToken
}

// sleep waits d unless the latency model is off; it returns ctx's error if ctx ends first.
func (g *generation) sleep(ctx context.Context, d time.Duration) error {
	if g.s.opts.Fast || d <= 0 {
		return ctx.Err()
	}
	if g.timer == nil {
		g.timer = time.NewTimer(d)
	} else {
		g.timer.Reset(d)
	}
	select {
	case <-ctx.Done():
		g.timer.Stop()
		return ctx.Err()
	case <-g.timer.C:
		return nil
	}
}

// dropNow reports whether the connection should be cut now (the drop fault).
func (g *generation) dropNow() bool {
	return g.drop && g.finish == "" && len(g.out) >= g.s.opts.DropAfter
}

// next waits for and emits the next token. It returns the new id and the text it released (which
// may be empty: an incomplete character, a special token, or text held back because it could
// start a stop string). After the token that finishes the request, g.finish is set. On a context
// error the request is finished as aborted and the error returned.
func (g *generation) next(ctx context.Context) (uint32, string, error) {
	d := g.s.opts.DecodePerToken
	if len(g.out) == 0 {
		d = g.prefillDelay()
	}
	if err := g.sleep(ctx, d); err != nil {
		g.finish = finishAbort
		return 0, "", err
	}
	id := g.script[len(g.out)]
	g.out = append(g.out, id)
	if len(g.out) == 1 {
		g.firstAt = time.Now()
	}

	var fin string
	var reason any
	switch {
	case !g.p.ignoreEOS && (id == g.s.imEnd || id == g.s.endOfText):
		fin = finishStop // EOS: stop_reason stays null, and its text is never shown
	case slices.Contains(g.p.stopIDs, id) || (!g.p.ignoreEOS && slices.Contains(g.s.genStops, id)):
		// The model's generation_config stop ids (gpt-oss's <|call|>) are stop_token_ids in vLLM:
		// stop_reason is the id.
		fin, reason = finishStop, id
	default:
		if !(g.p.skipSpecial && g.s.tok.IsSpecial(id)) {
			g.appendText(g.dec.Next(id)) // may finish on a stop string
		}
	}
	if g.finish == "" {
		if fin == "" && (len(g.out) >= g.p.maxTokens || len(g.out) >= len(g.script)) {
			fin = finishLength
		}
		if fin != "" {
			g.appendText(g.dec.Flush())
			if g.finish == "" {
				g.finish, g.stopReason = fin, reason
			}
		}
	}
	return id, g.release(), nil
}

// logprobsOf returns the simulated logprobs of the output ids at positions [from, to).
func (g *generation) logprobsOf(from, to int) []tokenLogprobs {
	out := make([]tokenLogprobs, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, g.s.logprobsAt(g.lpSeed, i, g.out[i], g.p.logprobs))
	}
	return out
}

// appendText adds newly decoded text and applies stop strings: on a match the text is cut where
// the stop string begins and the request finishes with it as stop_reason.
func (g *generation) appendText(t string) {
	if t == "" || g.finish != "" {
		return
	}
	from := max(0, g.text.Len()-g.maxStop+1)
	g.text.WriteString(t)
	if len(g.p.stop) == 0 {
		return
	}
	full := g.text.String()
	best, which := -1, ""
	for _, st := range g.p.stop {
		if st == "" {
			continue
		}
		if i := strings.Index(full[from:], st); i >= 0 && (best < 0 || from+i < best) {
			best, which = from+i, st
		}
	}
	if best >= 0 {
		g.text.Reset()
		g.text.WriteString(full[:best])
		g.finish, g.stopReason = finishStop, which
	}
}

// release returns the text not handed out yet. While the request runs with stop strings, the
// last len(longest stop)-1 bytes are held back (on a character boundary), because they could be
// the start of a stop string that the next token completes.
func (g *generation) release() string {
	full := g.text.String()
	end := len(full)
	if g.finish == "" && g.maxStop > 1 {
		end = max(g.sent, end-(g.maxStop-1))
		for end > g.sent && !utf8.RuneStart(full[end]) {
			end--
		}
	}
	if end <= g.sent {
		return ""
	}
	out := full[g.sent:end]
	g.sent = end
	return out
}

// end finishes the request (as aborted if it has no finish reason yet): it caches the blocks of
// the prompt and the generated tokens, releases the lease, and records metrics and the record line.
func (g *generation) end() {
	if g.finish == "" {
		g.finish = finishAbort
	}
	all := make([]uint32, 0, len(g.p.prompt)+len(g.out))
	all = append(append(all, g.p.prompt...), g.out...)
	g.s.cache.release(g.lease, all)
	if g.timer != nil {
		g.timer.Stop()
	}
	g.s.metrics.running.Add(-1)
	g.s.metrics.finished(g)
	g.s.record(g)
}

// faultDraw returns a uniform number in [0, 1) from the server's fault source.
func (s *Server) faultDraw() float64 {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	return s.faults.Float64()
}

// newFaultSource seeds the fault and drop draws from the server seed.
func newFaultSource(seed int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), 0x5157_6661_756c_7473))
}
