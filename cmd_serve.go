package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/stitchllm/stitch/configs"
	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/modeldir"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/stack"
)

func runServe(ctx context.Context, env cliEnv, args []string) error {
	return runServeReady(ctx, env, args, nil)
}

// runServeReady is runServe calling ready (when not nil) with the listening address once it
// accepts connections (tests listen on port 0).
func runServeReady(ctx context.Context, env cliEnv, args []string, ready func(addr string)) error {
	cfg, err := configs.Load("stitch serve", args, os.Getenv, env.stdout)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		fmt.Fprintf(env.stderr, "stitch serve: %v\n", err)
		return errUsage
	}
	families := make(map[string]family.Names, len(cfg.Models))
	for _, p := range cfg.Models { // before any model loads: an unknown family is a usage error
		names, err := profileFamily(p) // cmd_serve_harmony.go: gpt-oss is served through Harmony
		if err != nil {
			return fmt.Errorf("model %s: %w", p.Name, err)
		}
		if err := family.Check(names); err != nil {
			fmt.Fprintf(env.stderr, "stitch serve: model %s: %v\n", p.Name, err)
			return errUsage
		}
		families[p.Name] = names
	}
	logger, err := newLogger(cfg.Log, env.stderr)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	models := make(map[string]stack.Model, len(cfg.Models))
	for _, p := range cfg.Models {
		m, h, err := loadProfileModel(p, families[p.Name], os.Getenv)
		if err != nil {
			return fmt.Errorf("model %s: %w", p.Name, err)
		}
		models[p.Name] = stack.Model{Render: m, Harmony: h, Family: families[p.Name]}
		if h != nil && h.Options.StartDate == "" {
			logger.Warn("gpt-oss served through Harmony with an unpinned start date: every prompt's first tokens change when the day rolls over (set VLLM_SYSTEM_START_DATE as on vLLM)", "model", p.Name)
		}
	}
	// Before Open's caches and stores allocate.
	applyMemoryLimit(logger, cfg)
	st, err := stack.Open(ctx, stack.Config{Settings: cfg, Models: models, Logger: logger, Registry: reg})
	if err != nil {
		return err
	}
	defer func() { // after Serve's drain, in reverse order of what Open opened
		if err := st.Close(); err != nil {
			logger.Warn("shutdown: release the stack", "err", err)
		}
	}()
	ln, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if ready != nil {
		ready(ln.Addr().String())
	}
	logger.Info("stitch serving the Responses API", "addr", ln.Addr().String(), "upstream", st.UpstreamURL,
		"data_dir", cfg.Store.DataDir, "models", len(st.Runtimes), "version", version,
		"auth", map[bool]string{true: "api keys", false: "off (dev mode: any key is tenant default)"}[cfg.Auth.APIKeysFile != ""])
	if cfg.Auth.APIKeysFile == "" && !loopbackOnly(ln.Addr()) {
		logger.Warn("authentication is off and the listener accepts connections from other hosts: anyone who reaches it reads and continues every stored response; set --api-keys, or --listen 127.0.0.1:PORT", "addr", ln.Addr().String())
	}
	return st.Serve(ctx, ln, cfg.Server.ShutdownTimeout)
}

// loopbackOnly reports whether a listener's address is reachable from this host only.
func loopbackOnly(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// loadModel loads a model directory (the bundled demo model when dir is ""), with the chat
// template file templateFile replacing the directory's when it is not "".
func loadModel(dir, templateFile string) (*render.Renderer, error) {
	d, err := modeldir.Open(dir)
	if err != nil {
		return nil, err
	}
	tmpl, err := modeldir.ReadTemplateFile(templateFile)
	if err != nil {
		return nil, err
	}
	return d.Renderer(render.Options{ChatTemplate: tmpl})
}

func newLogger(lc configs.Log, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(lc.Level)); err != nil {
		return nil, fmt.Errorf("log level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	if lc.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}
