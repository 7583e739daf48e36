package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/stitchllm/stitch/render/harmony"
)

// harmonyStartDate resolves the Harmony conversation start date as `stitch render --responses`
// and `stitch serve` should: the --start-date flag, else VLLM_SYSTEM_START_DATE (vLLM's own
// pin), else today. An unpinned date changes every gpt-oss prompt's first tokens when the day
// rolls over, so the prefix cache misses once a day; pin it in production.
func harmonyStartDate(flag string, getenv func(string) string, now time.Time) string {
	if flag != "" {
		return flag
	}
	if getenv != nil {
		if v := getenv("VLLM_SYSTEM_START_DATE"); v != "" {
			return v
		}
	}
	return harmony.StartDate("", now)
}

// renderResponsesHarmony reads Responses request bodies as JSON lines and writes {"text","tokens"}
// per line: the prompt vLLM's /v1/responses builds for the gpt-oss model in fsys (its
// tokenizer.json). previous_response_id is not resolved: a line must carry the whole
// conversation in `input`. The first bad line stops the run with its line number.
//
// `stitch render --model-dir D --responses [--start-date YYYY-MM-DD]` calls this when D's
// config.json says model_type gpt_oss (harmony.IsHarmonyModel).
func renderResponsesHarmony(ctx context.Context, fsys fs.FS, opts harmony.Options, in io.Reader, out io.Writer) error {
	enc, err := harmony.LoadEncoder(fsys)
	if err != nil {
		return err
	}
	if opts.StartDate == "" {
		opts.StartDate = harmony.StartDate("", time.Now())
	}
	r := bufio.NewReaderSize(in, 1<<20)
	w := bufio.NewWriter(out)
	je := json.NewEncoder(w)
	je.SetEscapeHTML(false)
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Lines end at "\n" only: U+2028 inside a JSON string is not a line break.
		line, readErr := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			line = line[:len(line)-1]
		}
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		if len(line) > 0 {
			req, err := harmony.RequestFromBody(line)
			if err == nil {
				var p harmony.Prompt
				if _, p, err = enc.RenderResponses(req, opts); err == nil {
					err = je.Encode(renderOutput{Text: p.Text, Tokens: p.IDs})
				}
			}
			if err != nil {
				w.Flush()
				return fmt.Errorf("line %d: %w", n, err)
			}
		}
		if readErr == io.EOF {
			return w.Flush()
		}
		if readErr != nil {
			w.Flush()
			return fmt.Errorf("read stdin: %w", readErr)
		}
	}
}
