package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"text/tabwriter"
)

// percentile returns the p-th percentile (nearest rank) of xs, or 0 for none. xs is not modified.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

func sortTurns(ts []turnResult) {
	slices.SortFunc(ts, func(a, b turnResult) int {
		if a.session != b.session {
			return a.session - b.session
		}
		return a.turn - b.turn
	})
}

// WriteJSON writes the result as dir/bench.json, creating dir.
func (r *Result) WriteJSON(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode bench.json: %w", err)
	}
	path := filepath.Join(dir, "bench.json")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteTable prints the comparison table (one column per mode), then the ratios the issue's
// acceptance criteria name.
func (r *Result) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(name string, f func(m *ModeResult) string) {
		fmt.Fprintf(tw, "%s\t", name)
		for i := range r.Modes {
			fmt.Fprintf(tw, "%s\t", f(&r.Modes[i]))
		}
		fmt.Fprintln(tw)
	}
	row("", func(m *ModeResult) string { return m.Mode })
	row("turns", func(m *ModeResult) string { return fmt.Sprint(m.Turns) })
	row("max prompt tokens", func(m *ModeResult) string { return fmt.Sprint(m.MaxPromptTokens) })
	row("prefix-cache hit ratio", func(m *ModeResult) string { return fmt.Sprintf("%.4f", m.HitRatio) })
	row("prompt tokens recomputed", func(m *ModeResult) string { return fmt.Sprint(m.PromptTokensRecomputed) })
	row("prompt tokens tokenized", func(m *ModeResult) string { return fmt.Sprint(m.PromptTokensTokenized) })
	for _, b := range buckets {
		row("turn CPU ms p50 @"+b.name, func(m *ModeResult) string { return ms(m.TurnCPUMSP50.get(b.name)) })
	}
	for _, b := range buckets {
		row("turn CPU ms p50 @"+b.name+", from L1", func(m *ModeResult) string { return ms(m.TurnCPUL1MSP50.get(b.name)) })
	}
	for _, b := range buckets {
		row("turn CPU ms p50 @"+b.name+", from Redis", func(m *ModeResult) string { return ms(m.TurnCPURedisMSP50.get(b.name)) })
	}
	for _, b := range buckets {
		row("turn alloc KiB p50 @"+b.name, func(m *ModeResult) string { return kib(m.TurnAllocKBP50.get(b.name)) })
	}
	for _, b := range buckets {
		row("prep bound CPU ms p50 @"+b.name, func(m *ModeResult) string { return ms(m.PrepBoundCPUMSP50.get(b.name)) })
	}
	for _, b := range buckets {
		row("prep ms p50 @"+b.name, func(m *ModeResult) string { return ms(m.PrepMSP50.get(b.name)) })
		row("prep ms p99 @"+b.name, func(m *ModeResult) string { return ms(m.PrepMSP99.get(b.name)) })
	}
	for _, b := range buckets {
		row("prep CPU ms p50 @"+b.name, func(m *ModeResult) string { return ms(m.PrepCPUMSP50.get(b.name)) })
	}
	for _, b := range buckets {
		row("cold prep ms p50 @"+b.name, func(m *ModeResult) string { return ms(m.PrepColdMSP50.get(b.name)) })
	}
	for _, b := range buckets {
		row("cold prep CPU ms p50 @"+b.name, func(m *ModeResult) string { return ms(m.PrepColdCPUMSP50.get(b.name)) })
	}
	row("TTFT ms p50", func(m *ModeResult) string { return fmt.Sprintf("%.1f", m.TTFTMSP50) })
	row("TTFT ms p99", func(m *ModeResult) string { return fmt.Sprintf("%.1f", m.TTFTMSP99) })
	row("proxy CPU ms / turn", func(m *ModeResult) string { return fmt.Sprintf("%.1f", m.CPUSPerTurn*1000) })
	row("sim CPU s", func(m *ModeResult) string { return fmt.Sprintf("%.1f", m.SimCPUS) })
	row("MB client → proxy", func(m *ModeResult) string { return fmt.Sprintf("%.1f", float64(m.BytesFromClients)/1e6) })
	row("MB proxy → upstream", func(m *ModeResult) string { return fmt.Sprintf("%.1f", float64(m.BytesToUpstream)/1e6) })
	row("peak RSS MiB", func(m *ModeResult) string { return fmt.Sprintf("%.0f", m.PeakRSSMB) })
	row("memory bound MiB (formula)", func(m *ModeResult) string {
		if m.Memory == nil {
			return "—"
		}
		return fmt.Sprintf("%.0f", m.Memory.BoundMB)
	})
	row("wall s", func(m *ModeResult) string { return fmt.Sprintf("%.1f", m.WallS) })
	row("outcomes", func(m *ModeResult) string { return outcomes(m.Outcomes) })
	if err := tw.Flush(); err != nil {
		return err
	}
	r.writeStorage(w)
	for _, line := range r.Checks() {
		fmt.Fprintln(w, line)
	}
	if r.BodyDecode != nil {
		writeBodyDecode(w, r.BodyDecode)
	}
	if s := r.Streaming; s != nil {
		fmt.Fprintf(w, "\nstreaming: %.2f µs/token through the proxy vs %.2f direct (overhead %.2f µs/token, %d tokens)\n",
			s.ProxyUSPerToken, s.DirectUSPerToken, s.OverheadUSPerToken, s.Tokens)
		if s.CPUReps > 0 {
			fmt.Fprintf(w, "streaming CPU: %.2f µs/token through stitch vs %.2f through a plain reverse proxy (%.2f×, pairs' quartiles %.2f–%.2f×; %d pairs of %d-token streams; client reads per stream %d vs %d)\n",
				s.ProxyCPUUSPerToken, s.ReverseProxyCPUUSPerToken, s.ProxyCPURatio, s.ProxyCPURatioP25, s.ProxyCPURatioP75, s.CPUReps, s.ProxyStreamTokens, s.ProxyReads, s.ReverseProxyReads)
		}
		if s.PacedCPUReps > 0 {
			fmt.Fprintf(w, "streaming CPU, simulator paced at %.0f µs/token: %.2f µs/token through stitch vs %.2f through the reverse proxy (%.2f×, pairs' quartiles %.2f–%.2f×; %d pairs)\n",
				s.PacedCPUUS, s.PacedProxyCPUUSPerToken, s.PacedReverseProxyCPUUSPerToken, s.PacedProxyCPURatio, s.PacedProxyCPURatioP25, s.PacedProxyCPURatioP75, s.PacedCPUReps)
		}
		fmt.Fprintf(w, "concurrency (p99 gap between tokens, bound %.0f ms, decode %.0f ms/token):", s.BoundMS, s.DecodeMS)
		for _, l := range s.Levels {
			fmt.Fprintf(w, " %d→%.1fms", l.Streams, l.GapMSP99)
		}
		fmt.Fprintf(w, "; most streams under the bound: %d\n", s.MaxStreamsUnderBound)
	}
	return nil
}

func kib(v *float64) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf("%.0f", *v)
}

func ms(v *float64) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf("%.2f", *v)
}

func outcomes(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	s := ""
	for _, k := range keys {
		if s != "" {
			s += " "
		}
		s += fmt.Sprintf("%s=%d", k, m[k])
	}
	return s
}

func (r *Result) mode(name Mode) *ModeResult {
	for i := range r.Modes {
		if r.Modes[i].Mode == string(name) {
			return &r.Modes[i]
		}
	}
	return nil
}

// Checks states the acceptance criteria of issue 8 against this run: canonical's hit ratio equals
// full render's, exact's is at least canonical's, and canonical prepares 100k-token continuations
// at least 20× faster than full render warm and 10× cold (p50; issue 20). The ratios are the
// modes' *RatioVsFull fields, which Run fills.
func (r *Result) Checks() []string {
	full, canon, exact := r.mode(ModeFull), r.mode(ModeCanonical), r.mode(ModeExact)
	var out []string
	verdict := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "FAIL"
	}
	if full != nil && canon != nil {
		out = append(out, fmt.Sprintf("canonical hit ratio == full: %.6f vs %.6f (%s)", canon.HitRatio, full.HitRatio,
			verdict(canon.CachedTokens == full.CachedTokens && canon.PromptTokens == full.PromptTokens)))
		// Issue 20's acceptance at 100k: ≥ 20× warm, ≥ 10× cold.
		for _, b := range buckets {
			for _, k := range []struct {
				what string
				r    BucketRatio
				want float64
			}{
				{"wall", canon.PrepRatioVsFull, 20},
				{"CPU", canon.PrepCPURatioVsFull, 20},
				{"cold wall", canon.PrepColdRatioVsFull, 10},
				{"cold CPU", canon.PrepColdCPURatioVsFull, 10},
			} {
				v := k.r.get(b.name)
				if v == nil {
					continue
				}
				line := fmt.Sprintf("prep p50 @%s (%s): full / canonical = %.1f×", b.name, k.what, *v)
				if b.name == "100k" {
					line += fmt.Sprintf(" (want ≥ %g×: %s)", k.want, verdict(*v >= k.want))
				}
				out = append(out, line)
			}
		}
	}
	if full != nil && canon != nil {
		// Issue 32: the whole turn at 100k costs at most half a full render's, and preparation at
		// most twice the physical bound (tokenizing only the new text).
		if f, c := full.TurnCPUMSP50.get("100k"), canon.TurnCPUMSP50.get("100k"); f != nil && c != nil && *f > 0 {
			out = append(out, fmt.Sprintf("turn CPU p50 @100k: canonical / full = %.2f ms / %.2f ms = %.2f× (want ≤ 0.5×: %s)",
				*c, *f, *c / *f, verdict(*c / *f <= 0.5)))
		}
	}
	if canon != nil {
		if p, b := canon.PrepCPUMSP50.get("100k"), canon.PrepBoundCPUMSP50.get("100k"); p != nil && b != nil && *b > 0 {
			out = append(out, fmt.Sprintf("prep CPU p50 @100k: canonical / bound = %.3f ms / %.3f ms = %.2f× (want ≤ 2×: %s)",
				*p, *b, *p / *b, verdict(*p / *b <= 2)))
		}
	}
	for i := range r.Modes {
		if m := r.Modes[i].Memory; m != nil && m.RSSPeakMB > 0 {
			out = append(out, fmt.Sprintf("memory %s: peak RSS %.0f MiB vs bound %.0f MiB (operator guide formula; want ≤: %s)",
				r.Modes[i].Mode, m.RSSPeakMB, m.BoundMB, verdict(m.RSSPeakMB <= m.BoundMB)))
		}
	}
	if s := r.Streaming; s != nil && s.ProxyCPURatio > 0 {
		out = append(out, fmt.Sprintf("streaming CPU per token, stitch / reverse proxy = %.2f× (want ≤ 1.5×: %s)", s.ProxyCPURatio, verdict(s.ProxyCPURatio <= 1.5)))
	}
	if r.Soak != nil {
		out = append(out, r.Soak.CheckLine())
	}
	out = append(out, r.storageChecks(verdict)...)
	if canon != nil && exact != nil {
		out = append(out, fmt.Sprintf("exact hit ratio ≥ canonical: %.6f vs %.6f (%s)", exact.HitRatio, canon.HitRatio,
			verdict(exact.HitRatio >= canon.HitRatio)))
	}
	return out
}
