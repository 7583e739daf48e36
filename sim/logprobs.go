package sim

import (
	"encoding/binary"
	"hash/fnv"
	"strconv"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	pb "github.com/stitchllm/stitch/upstream/vllmgrpc/enginepb"
)

// maxLogprobs is vLLM's default --max-logprobs: the most alternatives a request may ask for.
const maxLogprobs = 20

// parseLogprobs reads /v1/completions' logprobs (the number of alternatives per token) and
// return_tokens_as_token_ids. vLLM refuses more than --max-logprobs (vllm/v1/engine/processor.py
// _validate_logprobs); -1 (the whole vocabulary) is refused here for the same reason.
func (sp *sampling) parseLogprobs(body []byte) *apiError {
	v := gjson.GetBytes(body, "logprobs")
	if !v.Exists() || v.Type == gjson.Null {
		return nil
	}
	n, ok := intValue(v)
	if !ok || v.Type != gjson.Number {
		return badRequest("logprobs", "logprobs must be an integer")
	}
	if n < 0 || n > maxLogprobs {
		return badRequest("logprobs", "Requested sample logprobs of %d, which is greater than max allowed: %d", n, maxLogprobs)
	}
	sp.logprobs, sp.wantLogprobs = int(n), true
	if t := gjson.GetBytes(body, "return_tokens_as_token_ids"); t.Type == gjson.True {
		sp.tokensAsIDs = true
	}
	return nil
}

// altLogprob is one alternative at a position.
type altLogprob struct {
	id uint32
	lp float32
}

// tokenLogprobs is a generated token's logprob and the n most likely tokens at its position,
// most likely first.
type tokenLogprobs struct {
	id  uint32
	lp  float32
	top []altLogprob
}

// logprobSeed is the per-request seed of the simulated logprobs: the same prompt and seed give
// the same values over either transport.
func logprobSeed(seed int64, prompt []uint32) uint64 {
	h := fnv.New64a()
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], uint64(seed))
	h.Write(buf[:])
	for _, id := range prompt {
		binary.LittleEndian.PutUint32(buf[:4], id)
		h.Write(buf[:4])
	}
	return h.Sum64()
}

func mix(x uint64) uint64 { // splitmix64's finalizer
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// logprobsAt simulates the logprobs of the token id generated at position pos: a negative value
// (multiples of 1/256, exact in float32 as vLLM's are float32), and n alternatives drawn from the
// vocabulary's ordinary tokens. The sampled token usually ranks first; one position in four it
// ranks second, as sampling at temperature > 0 does.
func (s *Server) logprobsAt(seed uint64, pos int, id uint32, n int) tokenLogprobs {
	h := mix(seed ^ mix(uint64(pos)+1) ^ uint64(id)<<32)
	out := tokenLogprobs{id: id, lp: -float32(h%768) / 256}
	if n == 0 {
		return out
	}
	step := float32(1+(h>>10)%8) / 32
	second := (h>>20)%4 == 0 && out.lp+step <= 0
	vocab := uint64(s.modelVocab())
	if vocab > 1<<31 {
		vocab = 1 << 31
	}
	var alts []uint32
	seen := map[uint32]bool{id: true}
	for j := uint64(1); len(alts) < n && j < uint64(64*n); j++ {
		a := uint32(mix(h+j) % vocab)
		if seen[a] || s.tok.IsSpecial(a) {
			continue
		}
		seen[a] = true
		alts = append(alts, a)
	}
	rank := 0
	if second {
		rank = 1
	}
	out.top = make([]altLogprob, 0, n)
	next := 0
	for r := 0; len(out.top) < n; r++ {
		if r == rank {
			out.top = append(out.top, altLogprob{id: id, lp: out.lp})
			continue
		}
		if next == len(alts) {
			break
		}
		v := out.lp - float32(r-rank)*step // below the sampled token; the one above it when rank 1
		out.top = append(out.top, altLogprob{id: alts[next], lp: v})
		next++
	}
	return out
}

// appendCompletionLogprobs writes vLLM's CompletionLogProbs for the tokens lps (positions from
// text offset off): {text_offset, token_logprobs, tokens, top_logprobs}, where each top_logprobs
// dict lists the sampled token first and then the top n, as vLLM's _create_completion_logprobs
// does. Tokens are "token_id:N" with return_tokens_as_token_ids, else the token's own text.
func (s *Server) appendCompletionLogprobs(dst []byte, lps []tokenLogprobs, off int, asIDs bool) []byte {
	token := func(dst []byte, id uint32) []byte {
		if asIDs {
			dst = append(dst, `"token_id:`...)
			dst = strconv.AppendUint(dst, uint64(id), 10)
			return append(dst, '"')
		}
		return appendJSONString(dst, s.tok.Decode([]uint32{id}))
	}
	dst = append(dst, `{"text_offset":[`...)
	for i, lp := range lps {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, int64(off), 10)
		if asIDs {
			off += len("token_id:") + len(strconv.FormatUint(uint64(lp.id), 10))
		} else {
			off += utf8.RuneCountInString(s.tok.Decode([]uint32{lp.id}))
		}
	}
	dst = append(dst, `],"token_logprobs":[`...)
	for i, lp := range lps {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendFloat(dst, float64(lp.lp), 'g', -1, 64)
	}
	dst = append(dst, `],"tokens":[`...)
	for i, lp := range lps {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = token(dst, lp.id)
	}
	dst = append(dst, `],"top_logprobs":[`...)
	for i, lp := range lps {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '{')
		dst = token(dst, lp.id)
		dst = append(dst, ':')
		dst = strconv.AppendFloat(dst, float64(lp.lp), 'g', -1, 64)
		for _, a := range lp.top {
			if a.id == lp.id {
				continue // a dict: the sampled token once
			}
			dst = append(dst, ',')
			dst = token(dst, a.id)
			dst = append(dst, ':')
			dst = strconv.AppendFloat(dst, float64(a.lp), 'g', -1, 64)
		}
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

// outputLogprobs is the gRPC engine API's OutputLogProbs for lps: the sampled ids and values, and
// per token the top n, most likely first.
func outputLogprobs(lps []tokenLogprobs) *pb.OutputLogProbs {
	out := &pb.OutputLogProbs{TokenLogprobs: make([]float32, len(lps)), TokenIds: make([]uint32, len(lps)), TopLogprobs: make([]*pb.TopLogProbs, len(lps))}
	for i, lp := range lps {
		out.TokenLogprobs[i], out.TokenIds[i] = lp.lp, lp.id
		top := &pb.TopLogProbs{Values: make([]float32, len(lp.top)), TokenIds: make([]uint32, len(lp.top))}
		for j, a := range lp.top {
			top.Values[j], top.TokenIds[j] = a.lp, a.id
		}
		out.TopLogprobs[i] = top
	}
	return out
}
