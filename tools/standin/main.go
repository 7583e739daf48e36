// Command standin writes a stand-in model directory for a family whose tokenizer is not available
// offline (GLM-4.x, Kimi K2): the family's real chat template over Qwen3's vocabulary with the
// family's special tokens added (internal/synthmodel; what the families matrix, the bench and the
// simulator use for them). Its texts are the family's, its ids are not.
//
// From the repository root:
//
//	go run ./tools/standin -family glm4/glm-4.6 -out /tmp/glm46
//	go run ./tools/standin -list
//
// then, for example, `stitch sim --model-dir /tmp/glm46 --tool-call-parser glm45 --reasoning-parser glm45`.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stitchllm/stitch/internal/synthmodel"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "standin:", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("standin", flag.ContinueOnError)
	name := fs.String("family", "", "stand-in to write, by template name (see -list)")
	out := fs.String("out", "", "directory to write (created)")
	list := fs.Bool("list", false, "list the stand-ins and exit")
	base := fs.String("tokenizer", filepath.Join("testdata", "models", "qwen3", "tokenizer.json"), "base vocabulary (tokenizer.json or its .gz)")
	renderDir := fs.String("templates", filepath.Join("testdata", "render"), "directory of the families' templates")
	if err := fs.Parse(args); err != nil {
		return err
	}
	names := make([]string, 0, len(synthmodel.Families))
	for n := range synthmodel.Families {
		names = append(names, n)
	}
	slices.Sort(names)
	if *list {
		fmt.Println(strings.Join(names, "\n"))
		return nil
	}
	if *name == "" || *out == "" {
		return fmt.Errorf("-family and -out are required (stand-ins: %s)", strings.Join(names, ", "))
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	return synthmodel.WriteFamily(*out, *base, *renderDir, *name)
}
