package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tidwall/sjson"

	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/render/harmony"
	"github.com/stitchllm/stitch/server"
	"github.com/stitchllm/stitch/stack"
	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/upstream"
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
	return renderBodyLines(ctx, in, out, func(line []byte) (renderOutput, error) {
		req, err := harmony.RequestFromBody(line)
		if err != nil {
			return renderOutput{}, err
		}
		_, p, err := enc.RenderResponses(req, opts)
		return renderOutput{Text: p.Text, Tokens: p.IDs}, err
	})
}

// renderResponsesTemplate is renderResponsesHarmony for the chat-template families: each body is
// prepared by the same server code as POST /v1/responses (server.Server.Preview: validation,
// items → messages, the chat template, tool_choice's forced call opening), on a server that has
// no upstream to call and no stored responses, so previous_response_id is answered as unknown.
// The request's "model" is replaced by the served one.
func renderResponsesTemplate(ctx context.Context, m *render.Renderer, names family.Names, in io.Reader, out io.Writer) error {
	const name = "render"
	rt, err := stack.NewModelRuntime(stack.ModelConfig{Name: name, Render: m, Family: names, MaxModelLen: 1 << 24})
	if err != nil {
		return err
	}
	srv, err := server.New(server.Options{
		Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry(), Checkpoints: store.NewMemory(),
		// Never called: Preview stops before the upstream.
		Upstream: upstream.New(upstream.Options{BaseURL: "http://127.0.0.1:1"}),
		Models:   map[string]*server.ModelRuntime{name: rt},
	})
	if err != nil {
		return err
	}
	return renderBodyLines(ctx, in, out, func(line []byte) (renderOutput, error) {
		body, err := sjson.SetBytes(line, "model", name)
		if err != nil {
			return renderOutput{}, fmt.Errorf("not a JSON object: %w", err)
		}
		p, err := srv.Preview(ctx, body)
		return renderOutput{Text: p.Text, Tokens: p.IDs}, err
	})
}

// renderBodyLines runs one render per non-empty JSON line of in and writes its {"text","tokens"}
// line; the first bad line stops the run with its line number.
func renderBodyLines(ctx context.Context, in io.Reader, out io.Writer, renderLine func([]byte) (renderOutput, error)) error {
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
			o, err := renderLine(line)
			if err == nil {
				if o.Tokens == nil {
					o.Tokens = []uint32{}
				}
				err = je.Encode(o)
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
