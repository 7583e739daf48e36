package deploy

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestImage builds the container image with `make image`, once with the classic builder and once
// with BuildKit, runs each (`serve` with no upstream: the built-in simulator), waits for the
// image's HEALTHCHECK (`stitch healthcheck`) to report healthy, and sends a Responses request
// through it. It needs a Docker daemon: without one it skips (.ci/run tries to start one).
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the container image")
	}
	requireDocker(t)
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on PATH")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct{ name, buildkit string }{{"classic", "0"}, {"buildkit", "1"}} {
		t.Run(b.name, func(t *testing.T) {
			tag := fmt.Sprintf("stitch-imagetest:%d-%s", os.Getpid(), b.name)
			mk := exec.CommandContext(t.Context(), "make", "image", "IMAGE="+tag)
			mk.Dir = root
			mk.Env = append(os.Environ(), "DOCKER_BUILDKIT="+b.buildkit)
			out, err := mk.CombinedOutput()
			if err != nil && b.buildkit == "1" && strings.Contains(string(out), "buildx") {
				t.Skipf("BuildKit: this docker CLI needs the buildx plugin, which is not installed:\n%s", tail(out))
			}
			if err != nil {
				t.Fatalf("make image (DOCKER_BUILDKIT=%s): %v\n%s", b.buildkit, err, tail(out))
			}
			t.Cleanup(func() { docker(t, context.Background(), "rmi", "-f", tag) })
			if user := strings.TrimSpace(docker(t, t.Context(), "image", "inspect", "-f", "{{.Config.User}}", tag)); user != "65532:65532" {
				t.Errorf("image user = %q, want 65532:65532", user)
			}
			checkImageFiles(t, tag)
			base := runImage(t, tag)
			id := createResponse(t, base)
			// The response was stored in the embedded store under /var/lib/stitch: the data
			// directory is the runtime user's.
			resp, err := http.Get(base + "/v1/responses/" + id)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("GET /v1/responses/%s = %d, want 200", id, resp.StatusCode)
			}
		})
	}
}

// checkImageFiles reads the image's file system (docker export of a created container) and
// checks what the Dockerfile promises: the binary and /etc root's, the data directory (and it
// alone) the runtime user's, a passwd entry for that user, no shell.
func checkImageFiles(t *testing.T, tag string) {
	t.Helper()
	name := strings.NewReplacer(":", "-", "/", "-").Replace(tag) + "-files"
	docker(t, t.Context(), "create", "--name", name, tag)
	defer docker(t, context.Background(), "rm", name)
	cmd := exec.CommandContext(t.Context(), "docker", "export", name)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	owners := map[string]int{}
	var passwd string
	tr := tar.NewReader(stdout)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("docker export: %v", err)
		}
		p := strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")
		owners[p] = h.Uid
		if p == "etc/passwd" {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			passwd = string(b)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("docker export: %v", err)
	}
	want := map[string]int{
		"usr/local/bin/stitch": 0, "etc/passwd": 0, "etc/group": 0,
		"var": 0, "var/lib": 0, "var/lib/stitch": 65532,
	}
	for p, uid := range want {
		if got, ok := owners[p]; !ok || got != uid {
			t.Errorf("image file %s: owner %d (present %v), want %d", p, got, ok, uid)
		}
	}
	for _, p := range []string{"bin/sh", "usr/bin/wget", "bin/busybox"} {
		if _, ok := owners[p]; ok {
			t.Errorf("image has %s; want the binary alone", p)
		}
	}
	if !strings.Contains(passwd, "\nstitch:x:65532:65532:") {
		t.Errorf("image /etc/passwd has no stitch user 65532:\n%s", passwd)
	}
}

// requireDocker skips the test unless `docker info` answers.
func requireDocker(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("no docker CLI on PATH")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "info").CombinedOutput()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Skipf("CI: no Docker daemon answers `docker info` (%v); .ci/run tries to start one "+
			"(docker.io, dockerd --storage-driver vfs) and printed why it could not:\n%s", err, tail(out))
	}
	t.Skipf("no Docker daemon answers `docker info`: %v", err)
}

// runImage starts the image detached (removed at cleanup), waits until its HEALTHCHECK says
// healthy and returns the base URL of its listener. Where the daemon has its default bridge the
// port is published on loopback; otherwise (dockerd --bridge=none, as .ci/run starts it) the
// container shares the host's network and listens on a free loopback port, which its health
// probe follows through STITCH_LISTEN.
func runImage(t *testing.T, tag string) string {
	t.Helper()
	name := strings.NewReplacer(":", "-", "/", "-").Replace(tag)
	args := []string{"run", "-d", "--name", name, "--health-interval", "1s"}
	bridge := exec.CommandContext(t.Context(), "docker", "network", "inspect", "bridge").Run() == nil
	var hostPort string
	if bridge {
		args = append(args, "-p", "127.0.0.1::8080")
	} else {
		hostPort = freePort(t)
		args = append(args, "--network", "host", "-e", "STITCH_LISTEN=127.0.0.1:"+hostPort)
	}
	docker(t, t.Context(), append(args, tag)...)
	t.Cleanup(func() {
		if t.Failed() {
			// The container's stderr (stitch logs there) comes back on docker logs' stderr.
			out, _ := exec.Command("docker", "logs", "--tail", "40", name).CombinedOutput()
			t.Logf("container %s: %s\nlogs:\n%s", name,
				docker(t, context.Background(), "inspect", "-f", "exit {{.State.ExitCode}} {{.State.Error}}", name), out)
		}
		docker(t, context.Background(), "rm", "-f", name)
	})
	if bridge {
		// "127.0.0.1:49153"
		_, port, err := net.SplitHostPort(strings.TrimSpace(strings.Split(docker(t, t.Context(), "port", name, "8080/tcp"), "\n")[0]))
		if err != nil {
			t.Fatalf("docker port: %v", err)
		}
		hostPort = port
	}
	// Wait on the container's health state; the bound only keeps a broken image from hanging the run.
	deadline := time.Now().Add(3 * time.Minute)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		state := strings.TrimSpace(docker(t, t.Context(), "inspect", "-f", "{{.State.Status}} {{.State.Health.Status}}", name))
		switch {
		case state == "running healthy":
			return "http://127.0.0.1:" + hostPort
		case !strings.HasPrefix(state, "running"), strings.HasSuffix(state, "unhealthy"):
			t.Fatalf("container %s: %s", name, state)
		case time.Now().After(deadline):
			t.Fatalf("container %s not healthy after 3 minutes: %s", name, state)
		}
		<-tick.C
	}
}

// createResponse sends a Responses request and returns the completed response's id.
func createResponse(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Post(base+"/v1/responses", "application/json",
		strings.NewReader(`{"model":"qwen3","input":"Hello from the container test!"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/responses = %d: %s", resp.StatusCode, body)
	}
	var r struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Output []struct {
			Type string `json:"type"`
		} `json:"output"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("response: %v: %s", err, body)
	}
	if r.Status != "completed" || !strings.HasPrefix(r.ID, "resp_") || len(r.Output) == 0 {
		t.Fatalf("response status %q id %q with %d output items: %s", r.Status, r.ID, len(r.Output), body)
	}
	return r.ID
}

// docker runs the docker CLI and returns its stdout; a failure fails the test.
func docker(t *testing.T, ctx context.Context, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, "docker", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Errorf("docker %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// freePort returns a loopback TCP port nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// tail is the last lines of a command's output, enough to show why it failed.
func tail(out []byte) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-25):], "\n")
}
