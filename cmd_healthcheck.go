package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/stitchllm/stitch/configs"
)

// runHealthcheck is the container image's probe: the image is FROM scratch, with no shell, wget or
// curl, so the binary probes itself. It GETs /readyz on loopback (or --url) and exits 0 on a 2xx
// answer, 1 otherwise. Without --url the port comes from STITCH_LISTEN, as serve's does, so moving
// the listener with that variable moves the probe with it.
func runHealthcheck(ctx context.Context, env cliEnv, args []string) error {
	return healthcheck(ctx, env, args, os.Getenv)
}

func healthcheck(ctx context.Context, env cliEnv, args []string, getenv func(string) string) error {
	fs := newFlagSet(env, "healthcheck", "[--url URL] [--timeout D]")
	def := probeURL(getenv(configs.EnvName("listen")))
	target := fs.String("url", def, "URL to GET; any 2xx answer is healthy (default from "+configs.EnvName("listen")+")")
	timeout := fs.Duration("timeout", 2*time.Second, "give up after this long")
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(env.stderr, "stitch healthcheck: unexpected argument %q\n", fs.Arg(0))
		return errUsage
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *target, nil)
	if err != nil {
		return fmt.Errorf("probe %s: %w", *target, err)
	}
	// No proxy from the environment: the probe is for this container's own listener.
	client := &http.Client{Transport: &http.Transport{Proxy: nil}}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("probe %s: %s: %s", *target, resp.Status, body)
	}
	return nil
}

// probeURL is /readyz on loopback at the port of listen (serve's --listen syntax, ":8080" when
// empty). A listener on a specific address is probed there; a wildcard one on 127.0.0.1.
func probeURL(listen string) string {
	if listen == "" {
		listen = ":8080"
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		host, port = "", "8080"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/readyz"
}
