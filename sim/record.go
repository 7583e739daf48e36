package sim

import "strconv"

// record writes g's record line to Options.Record, if set. Lines are written whole, one at a time.
func (s *Server) record(g *generation) {
	if s.opts.Record == nil {
		return
	}
	b := []byte(`{"endpoint":`)
	b = appendJSONString(b, g.p.endpoint)
	b = append(b, `,"prompt_token_ids":`...)
	b = appendIDs(b, nonNil(g.p.prompt))
	b = append(b, `,"cache_salt":`...)
	b = appendNullableString(b, g.p.salt)
	b = append(b, `,"max_tokens":`...)
	b = strconv.AppendInt(b, int64(g.p.maxTokens), 10)
	b = append(b, `,"cached_tokens":`...)
	b = strconv.AppendInt(b, int64(g.cached), 10)
	b = append(b, `,"output_token_ids":`...)
	b = appendIDs(b, nonNil(g.out))
	b = append(b, `,"finish_reason":`...)
	b = appendJSONString(b, g.finish)
	b = append(b, "}\n"...)
	s.recordMu.Lock()
	defer s.recordMu.Unlock()
	if _, err := s.opts.Record.Write(b); err != nil {
		s.opts.Logger.Warn("write record line", "err", err)
	}
}
