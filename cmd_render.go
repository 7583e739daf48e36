package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/stitchllm/stitch/configs/demomodel"
	"github.com/stitchllm/stitch/render"
)

// runRender reads chat requests as JSON lines on stdin and writes {"text","tokens"} per line:
// the prompt vLLM's chat path would build (preprocessing, chat template, tokenizer with
// add_special_tokens=false). The first bad line stops the run with its line number.
func runRender(ctx context.Context, env cliEnv, args []string) error {
	fset := newFlagSet(env, "render", "[--model-dir DIR] [--chat-template FILE] < requests.jsonl")
	modelDir := fset.String("model-dir", "", "Hugging Face model directory (tokenizer.json, tokenizer_config.json); default: the embedded Qwen3 demo model")
	templateFile := fset.String("chat-template", "", "Jinja chat template file that replaces the model's")
	templateName := fset.String("template-name", "", "named template when tokenizer_config.json holds several (default \"default\")")
	if err := parseFlags(env, fset, args); err != nil {
		return err
	}
	opts := render.Options{TemplateName: *templateName}
	if *templateFile != "" {
		b, err := os.ReadFile(*templateFile)
		if err != nil {
			return fmt.Errorf("read chat template: %w", err)
		}
		opts.ChatTemplate = string(b)
	}
	var fsys fs.FS
	if *modelDir != "" {
		fsys = os.DirFS(*modelDir)
	} else {
		var err error
		if fsys, err = demomodel.FS(); err != nil {
			return err
		}
	}
	m, err := render.LoadModel(fsys, opts)
	if err != nil {
		return err
	}
	return renderLines(ctx, m, env.stdin, env.stdout)
}

type renderOutput struct {
	Text   string   `json:"text"`
	Tokens []uint32 `json:"tokens"`
}

func renderLines(ctx context.Context, m *render.Model, in io.Reader, out io.Writer) error {
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
			text, ids, err := m.Render(req)
			if err != nil {
				w.Flush()
				return fmt.Errorf("line %d: %w", n, err)
			}
			if ids == nil {
				ids = []uint32{}
			}
			if err := enc.Encode(renderOutput{Text: text, Tokens: ids}); err != nil {
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
