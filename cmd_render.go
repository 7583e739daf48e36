package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/stitchllm/stitch/configs"
	"github.com/stitchllm/stitch/modeldir"
	"github.com/stitchllm/stitch/render"
)

// runRender reads chat requests as JSON lines on stdin and writes {"text","tokens"} per line:
// the prompt vLLM's chat path would build (preprocessing, chat template, tokenizer with
// add_special_tokens=false). The first bad line stops the run with its line number. With
// --text-only the tokenizer is not loaded and lines are {"text"}: any model directory whose
// template loads renders, whatever its tokenizer.
func runRender(ctx context.Context, env cliEnv, args []string) error {
	fset := newFlagSet(env, "render", "[--model-dir DIR] [--chat-template FILE] [--text-only] [--content-format auto|string|openai] < requests.jsonl")
	modelDir := fset.String("model-dir", "", "Hugging Face model directory (tokenizer.json, tokenizer_config.json); default: the embedded Qwen3 demo model")
	templateFile := fset.String("chat-template", "", "Jinja chat template file that replaces the model's")
	templateName := fset.String("template-name", "", "named template when tokenizer_config.json holds several (default \"default\")")
	textOnly := fset.Bool("text-only", false, "render prompt text only, without loading tokenizer.json")
	contentFormat := fset.String("content-format", "auto", "how message content reaches the template, as vLLM's --chat-template-content-format: auto (detected from the template), string or openai")
	responses := fset.Bool("responses", false, "lines are Responses request bodies (the whole conversation in input), rendered as stitch serve prompts for them")
	startDate := fset.String("start-date", "", "with --responses: the Harmony conversation start date YYYY-MM-DD (default: VLLM_SYSTEM_START_DATE, else today)")
	toolCallParser := fset.String("tool-call-parser", "", "with --responses: vLLM's --tool-call-parser, the model family (openai selects Harmony; a config.json with model_type gpt_oss does too)")
	reasoningParser := fset.String("reasoning-parser", "", "with --responses: vLLM's --reasoning-parser")
	if err := parseFlags(env, fset, args); err != nil {
		return err
	}
	if *responses {
		return renderResponses(ctx, env, configs.ModelProfile{Dir: *modelDir, ChatTemplate: *templateFile,
			ToolCallParser: *toolCallParser, ReasoningParser: *reasoningParser}, *startDate)
	}
	opts := render.Options{TemplateName: *templateName}
	switch *contentFormat {
	case "auto":
	case string(render.ContentString), string(render.ContentOpenAI):
		opts.ContentFormat = render.ContentFormat(*contentFormat)
	default:
		return fmt.Errorf("--content-format %q: want auto, string or openai", *contentFormat)
	}
	var err error
	if opts.ChatTemplate, err = modeldir.ReadTemplateFile(*templateFile); err != nil {
		return err
	}
	d, err := modeldir.Open(*modelDir)
	if err != nil {
		return err
	}
	if *textOnly {
		ct, err := d.ChatTemplate(opts)
		if err != nil {
			return err
		}
		return renderLines(ctx, textRenderer(ct), env.stdin, env.stdout)
	}
	m, err := d.Renderer(opts)
	if err != nil {
		return err
	}
	return renderLines(ctx, modelRenderer(m), env.stdin, env.stdout)
}

// renderResponses is `stitch render --responses`: Harmony for a gpt-oss model, else the chat
// template through the server's own request preparation.
func renderResponses(ctx context.Context, env cliEnv, p configs.ModelProfile, startDate string) error {
	names, err := profileFamily(p)
	if err != nil {
		return err
	}
	if names != harmonyNames {
		m, err := loadModel(p.Dir, p.ChatTemplate)
		if err != nil {
			return err
		}
		return renderResponsesTemplate(ctx, m, names, env.stdin, env.stdout)
	}
	d, err := modeldir.Open(p.Dir)
	if err != nil {
		return err
	}
	opts := harmonyServeOptions(os.Getenv)
	opts.StartDate = harmonyStartDate(startDate, os.Getenv, time.Now())
	return renderResponsesHarmony(ctx, d.FS(), opts, env.stdin, env.stdout)
}

// lineRenderer renders one request: the prompt text and its ids (nil ids: text only).
type lineRenderer func(render.ChatRequest) (string, []uint32, error)

func modelRenderer(m *render.Renderer) lineRenderer {
	return func(req render.ChatRequest) (string, []uint32, error) {
		text, ids, err := m.Render(req)
		if err == nil && ids == nil {
			ids = []uint32{}
		}
		return text, ids, err
	}
}

func textRenderer(ct *render.ChatTemplate) lineRenderer {
	return func(req render.ChatRequest) (string, []uint32, error) {
		text, err := ct.RenderText(req)
		return text, nil, err
	}
}

type renderOutput struct {
	Text   string   `json:"text"`
	Tokens []uint32 `json:"tokens"`
}

// textOutput is a --text-only line.
type textOutput struct {
	Text string `json:"text"`
}

func renderLines(ctx context.Context, renderOne lineRenderer, in io.Reader, out io.Writer) error {
	r := bufio.NewReaderSize(in, 1<<20)
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
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
			req, err := render.ParseChatRequest(line)
			if err != nil {
				w.Flush()
				return fmt.Errorf("line %d: %w", n, err)
			}
			text, ids, err := renderOne(req)
			if err != nil {
				w.Flush()
				return fmt.Errorf("line %d: %w", n, err)
			}
			var line any = renderOutput{Text: text, Tokens: ids}
			if ids == nil {
				line = textOutput{Text: text}
			}
			if err := enc.Encode(line); err != nil {
				return fmt.Errorf("write output: %w", err)
			}
		}
		if readErr == io.EOF {
			break
		}
		if readErr != nil {
			w.Flush()
			return fmt.Errorf("read line %d: %w", n, readErr)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}
