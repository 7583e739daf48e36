// Package demomodel bundles the demo model (Qwen3's tokenizer and chat template) into the binary,
// so `stitch serve` and `stitch sim` run from any working directory with no download.
//
// The tokenizer is stored gzip-compressed (2 MB instead of 11 MB) and inflated once on first use.
package demomodel

import (
	"bytes"
	"compress/gzip"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"testing/fstest"
	"time"
)

// Name is the served model name the demo uses when none is configured.
const Name = "qwen3"

//go:embed qwen3
var files embed.FS

// FS returns the demo model directory (tokenizer.json, tokenizer_config.json) as an fs.FS.
// Each call inflates the tokenizer afresh (about 30 ms); callers keep the result.
func FS() (fs.FS, error) {
	out := fstest.MapFS{}
	entries, err := fs.ReadDir(files, "qwen3")
	if err != nil {
		return nil, fmt.Errorf("read embedded demo model: %w", err)
	}
	for _, e := range entries {
		data, err := fs.ReadFile(files, "qwen3/"+e.Name())
		if err != nil {
			return nil, fmt.Errorf("read embedded %s: %w", e.Name(), err)
		}
		name := e.Name()
		if n, ok := bytes.CutSuffix([]byte(name), []byte(".gz")); ok {
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				return nil, fmt.Errorf("inflate embedded %s: %w", name, err)
			}
			data, err = io.ReadAll(zr)
			if err != nil {
				return nil, fmt.Errorf("inflate embedded %s: %w", name, err)
			}
			name = string(n)
		}
		out[name] = &fstest.MapFile{Data: data, Mode: 0o444, ModTime: time.Time{}}
	}
	return out, nil
}
