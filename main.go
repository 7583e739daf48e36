// Command stitch is a Responses-API proxy in front of vLLM that keeps the exact token ids of every
// conversation, plus the tools around it: a vLLM simulator, a tokenizer and renderer CLI, and a
// benchmark driver. Run `stitch --help` for the subcommands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

// Set at link time: go build -ldflags "-X main.version=v0.1.0 -X main.commit=… -X main.buildDate=…".
// When unset they are read from the module's build info.
var (
	version   = "dev"
	commit    = ""
	buildDate = ""
)

// errUsage reports a command-line mistake; main exits 2 after the usage text was printed.
var errUsage = errors.New("usage")

// errNotImplemented marks a subcommand that exists in the CLI but is not built yet.
var errNotImplemented = errors.New("not implemented yet")

// command is one `stitch` subcommand. run gets the arguments after the subcommand name.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env cliEnv, args []string) error
}

// cliEnv carries the process's streams so subcommands are testable without touching os.*.
type cliEnv struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

func commands() []command {
	return []command{
		{"serve", "serve the OpenAI Responses API in front of vLLM (or the built-in simulator)", runServe},
		{"sim", "run the CPU vLLM simulator (real tokenizer, prefix-cache model)", runSim},
		{"tokenize", "tokenize JSON-string lines from stdin into id arrays (or --decode)", runTokenize},
		{"render", "render chat requests (JSON lines) to prompt text and token ids", runRender},
		{"bench", "measure full render against token artifacts, side by side", runBench},
		{"healthcheck", "probe a running serve's /readyz (the container image's health check)", runHealthcheck},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, cliEnv{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}

// run dispatches to a subcommand and maps its error to an exit code:
// 0 success, 1 failure, 2 usage error or not implemented.
func run(ctx context.Context, env cliEnv, args []string) int {
	if len(args) == 0 {
		usage(env.stderr)
		return 2
	}
	switch args[0] {
	case "-h", "--help", "help":
		usage(env.stdout)
		return 0
	case "-version", "--version", "version":
		fmt.Fprintln(env.stdout, versionString())
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, env, args[1:])
		switch {
		case err == nil, errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			return 2
		case errors.Is(err, errNotImplemented):
			fmt.Fprintf(env.stderr, "stitch %s: not implemented yet\n", c.name)
			return 2
		default:
			fmt.Fprintf(env.stderr, "stitch %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(env.stderr, "stitch: unknown command %q\n\n", args[0])
	usage(env.stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "stitch %s: a Responses API layer for vLLM that keeps exact token ids\n\n", version)
	fmt.Fprintln(w, "Usage: stitch <command> [flags]")
	fmt.Fprintln(w, "\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun `stitch <command> --help` for a command's flags; `stitch --version` for the build.")
}

// newFlagSet returns a FlagSet whose usage names the subcommand and whose errors are returned,
// not fatal, so commands stay testable.
func newFlagSet(env cliEnv, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("stitch "+name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: stitch %s %s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args and turns a flag error into errUsage (the message is already printed).
// --help prints the usage on stdout and returns flag.ErrHelp.
func parseFlags(env cliEnv, fs *flag.FlagSet, args []string) error {
	for _, a := range args {
		if a == "--help" || a == "-help" || a == "-h" {
			fs.SetOutput(env.stdout)
			fs.Usage()
			return flag.ErrHelp
		}
	}
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(env.stderr, "stitch: unexpected arguments: %v\n", fs.Args())
		fs.Usage()
		return errUsage
	}
	return nil
}

func versionString() string {
	rev, date, dirty := commit, buildDate, false
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				if rev == "" {
					rev = s.Value
				}
			case "vcs.time":
				if date == "" {
					date = s.Value
				}
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if rev == "" {
		rev = "unknown"
	}
	if dirty {
		rev += "-dirty"
	}
	if date == "" {
		date = "unknown"
	}
	return fmt.Sprintf("stitch %s (commit %s, built %s)", version, rev, date)
}
