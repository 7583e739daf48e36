package deploy

import (
	"context"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/stitchllm/stitch/configs"
)

// loadCompose loads ../docker-compose.yml the way `docker compose --profile P up` does (profiles
// selected, variables at their defaults) and returns the project.
func loadCompose(t *testing.T, profiles ...string) *types.Project {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	details := types.ConfigDetails{
		WorkingDir:  root,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(root, "docker-compose.yml")}},
		Environment: types.Mapping{},
	}
	p, err := loader.LoadWithContext(context.Background(), details, func(o *loader.Options) {
		o.SetProjectName("stitch", true)
		o.Profiles = profiles
	})
	if err != nil {
		t.Fatalf("load docker-compose.yml with profiles %v: %v", profiles, err)
	}
	return p
}

func service(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	s, err := p.GetService(name)
	if err != nil {
		t.Fatalf("service %q: %v", name, err)
	}
	return s
}

func env(s types.ServiceConfig, key string) string {
	if v := s.Environment[key]; v != nil {
		return *v
	}
	return ""
}

func TestComposeProfiles(t *testing.T) {
	tests := []struct {
		name     string
		profiles []string
		want     []string
	}{
		// Every service belongs to a profile: a bare `docker compose up` selects nothing rather than
		// a stack that cannot work (vLLM without a GPU, or stitch without a backend).
		{"none", nil, nil},
		{"gpu", []string{"gpu"}, []string{"model", "redis", "stitch", "vllm"}},
		{"sim", []string{"sim"}, []string{"redis", "sim", "stitch-sim"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := loadCompose(t, tt.profiles...)
			got := p.ServiceNames()
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("profiles %v: services %v, want %v", tt.profiles, got, tt.want)
			}
		})
	}
}

// TestComposeSimNeedsNoGPU is the promise of `docker compose --profile sim up`.
func TestComposeSimNeedsNoGPU(t *testing.T) {
	p := loadCompose(t, "sim")
	for name, s := range p.Services {
		if len(s.Gpus) > 0 || s.Runtime == "nvidia" {
			t.Errorf("service %s asks for a GPU in the sim profile", name)
		}
		if s.Deploy != nil && s.Deploy.Resources.Reservations != nil && len(s.Deploy.Resources.Reservations.Devices) > 0 {
			t.Errorf("service %s reserves devices in the sim profile", name)
		}
		if strings.HasPrefix(s.Image, "vllm/") {
			t.Errorf("service %s runs %s in the sim profile", name, s.Image)
		}
	}
}

func TestComposeVLLM(t *testing.T) {
	p := loadCompose(t, "gpu")
	v := service(t, p, "vllm")
	if !strings.HasPrefix(v.Image, "vllm/vllm-openai:") || strings.HasSuffix(v.Image, ":latest") {
		t.Errorf("vllm image = %q, want a pinned vllm/vllm-openai tag", v.Image)
	}
	args := []string(v.Command)
	for _, flag := range []string{"--enable-prompt-tokens-details", "--prefix-caching-hash-algo", "--served-model-name", "--max-model-len", "--model"} {
		if !slices.Contains(args, flag) {
			t.Errorf("vllm command lacks %s: %q", flag, args)
		}
	}
	if got := flagValue(args, "--prefix-caching-hash-algo"); got != "sha256_cbor" {
		t.Errorf("--prefix-caching-hash-algo = %q, want sha256_cbor (hashes comparable across replicas)", got)
	}
	if got := flagValue(args, "--max-model-len"); got != "32768" {
		t.Errorf("--max-model-len = %q, want the default 32768", got)
	}
	if seed := env(v, "PYTHONHASHSEED"); seed == "" || strings.Trim(seed, "0123456789") != "" {
		t.Errorf("PYTHONHASHSEED = %q, want a pinned integer", seed)
	}
	gpu := false
	if v.Deploy != nil && v.Deploy.Resources.Reservations != nil {
		for _, d := range v.Deploy.Resources.Reservations.Devices {
			gpu = gpu || (d.Driver == "nvidia" && slices.Contains(d.Capabilities, "gpu"))
		}
	}
	if !gpu {
		t.Error("vllm reserves no NVIDIA GPU")
	}
	if dep, ok := v.DependsOn["model"]; !ok || dep.Condition != types.ServiceConditionCompletedSuccessfully {
		t.Errorf("vllm depends_on model = %+v, want service_completed_successfully", dep)
	}
	// stitch and vLLM must read the same tokenizer and chat template: both from the model volume.
	st := service(t, p, "stitch")
	if model, dir := flagValue(args, "--model"), env(st, configs.EnvName("model-dir")); model != dir {
		t.Errorf("vllm --model %q but stitch %s=%q: they must load the same model directory", model, configs.EnvName("model-dir"), dir)
	}
	if got, want := env(st, configs.EnvName("served-model-name")), flagValue(args, "--served-model-name"); got != want {
		t.Errorf("stitch serves %q, vllm serves %q", got, want)
	}
}

func TestComposeStitch(t *testing.T) {
	tests := []struct {
		profile, stitch, backend, backendPort string
	}{
		{"gpu", "stitch", "vllm", "8000"},
		{"sim", "stitch-sim", "sim", "8000"},
	}
	for _, tt := range tests {
		t.Run(tt.profile, func(t *testing.T) {
			p := loadCompose(t, tt.profile)
			s := service(t, p, tt.stitch)
			if len(s.Command) == 0 || s.Command[0] != "serve" {
				t.Errorf("%s command = %q, want serve …", tt.stitch, s.Command)
			}
			if s.Build == nil {
				t.Errorf("%s has no build section: the image is built from this checkout", tt.stitch)
			}
			up, err := url.Parse(env(s, configs.EnvName("upstream")))
			if err != nil || up.Scheme != "http" || up.Hostname() != tt.backend || up.Port() != tt.backendPort {
				t.Errorf("%s upstream = %q, want http://%s:%s", tt.stitch, env(s, configs.EnvName("upstream")), tt.backend, tt.backendPort)
			}
			rd, err := url.Parse(env(s, configs.EnvName("redis")))
			if err != nil || rd.Scheme != "redis" || rd.Hostname() != "redis" {
				t.Errorf("%s redis = %q, want redis://redis:…", tt.stitch, env(s, configs.EnvName("redis")))
			}
			for dep, cond := range map[string]string{tt.backend: types.ServiceConditionHealthy, "redis": types.ServiceConditionHealthy} {
				if got := s.DependsOn[dep]; got.Condition != cond || !got.Required {
					t.Errorf("%s depends_on %s = %+v, want required %s", tt.stitch, dep, got, cond)
				}
			}
			published := false
			for _, port := range s.Ports {
				published = published || (port.Target == 8080 && port.Published == "8080")
			}
			if !published {
				t.Errorf("%s ports = %+v, want 8080:8080", tt.stitch, s.Ports)
			}
			// The image is FROM scratch: no wget, the binary probes itself (/readyz at STITCH_LISTEN).
			if hc := testOf(s); hc != "CMD /usr/local/bin/stitch healthcheck" {
				t.Errorf("%s healthcheck = %q, want the image's own `stitch healthcheck`", tt.stitch, hc)
			}
			if listen := env(s, configs.EnvName("listen")); listen != ":8080" && listen != "0.0.0.0:8080" {
				t.Errorf("%s %s = %q, want :8080", tt.stitch, configs.EnvName("listen"), listen)
			}
			// The backend serves the model name stitch forwards.
			b := service(t, p, tt.backend)
			if got, want := flagValue(b.Command, "--served-model-name"), env(s, configs.EnvName("served-model-name")); got != want {
				t.Errorf("%s serves %q, %s forwards %q", tt.backend, got, tt.stitch, want)
			}
		})
	}
}

func TestComposeSimService(t *testing.T) {
	p := loadCompose(t, "sim")
	s := service(t, p, "sim")
	if len(s.Command) == 0 || s.Command[0] != "sim" {
		t.Fatalf("sim command = %q, want sim …", s.Command)
	}
	if st := service(t, p, "stitch-sim"); s.Image != st.Image {
		t.Errorf("sim image %q differs from stitch-sim image %q: the simulator ships in the stitch image", s.Image, st.Image)
	}
	// The default --listen is loopback only: other containers could not reach it.
	if got := flagValue(s.Command, "--listen"); got != "0.0.0.0:8000" {
		t.Errorf("sim --listen = %q, want 0.0.0.0:8000", got)
	}
	if hc := testOf(s); hc != "CMD /usr/local/bin/stitch healthcheck --url http://127.0.0.1:8000/health" {
		t.Errorf("sim healthcheck = %q, want `stitch healthcheck` of /health on 8000", hc)
	}
}

func TestComposeHealthchecks(t *testing.T) {
	for _, profile := range []string{"gpu", "sim"} {
		p := loadCompose(t, profile)
		for name, s := range p.Services {
			if name == "model" { // a one-shot download job
				continue
			}
			if s.HealthCheck == nil || len(s.HealthCheck.Test) < 2 || s.HealthCheck.Disable {
				t.Errorf("%s/%s: no healthcheck", profile, name)
			}
		}
		if r := service(t, p, "redis"); !strings.HasPrefix(r.Image, "redis:7") || !strings.Contains(testOf(r), "ping") {
			t.Errorf("%s/redis: image %q, healthcheck %q; want redis:7 with redis-cli ping", profile, r.Image, testOf(r))
		}
	}
}

// TestComposeStitchSettings keeps the file in step with the code: every STITCH_* variable and
// every serve flag it uses must exist in configs.
func TestComposeStitchSettings(t *testing.T) {
	known := knownEnv()
	flags := map[string]bool{}
	for _, f := range configs.FlagNames() {
		flags[f] = true
	}
	for _, profile := range []string{"gpu", "sim"} {
		p := loadCompose(t, profile)
		for name, s := range p.Services {
			for k := range s.Environment {
				if strings.HasPrefix(k, "STITCH_") && !known[k] {
					t.Errorf("%s: %s is not a stitch setting (configs.EnvName of a flag)", name, k)
				}
			}
			if len(s.Command) > 0 && s.Command[0] == "serve" {
				for _, f := range flagNames(s.Command[1:]) {
					if !flags[f] {
						t.Errorf("%s: stitch serve has no --%s", name, f)
					}
				}
			}
		}
	}
}

func knownEnv() map[string]bool {
	known := map[string]bool{}
	for _, f := range configs.FlagNames() {
		known[configs.EnvName(f)] = true
	}
	return known
}

// flagValue returns the argument after name in args ("" when absent), or the value of name=value.
func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// flagNames returns the names of the -flag / --flag arguments in args.
func flagNames(args []string) []string {
	var out []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name := strings.TrimLeft(a, "-")
		name, _, _ = strings.Cut(name, "=")
		out = append(out, name)
	}
	return out
}

func testOf(s types.ServiceConfig) string {
	if s.HealthCheck == nil {
		return ""
	}
	return strings.Join(s.HealthCheck.Test, " ")
}

// TestComposeVariables checks that the documented Compose variables take effect.
func TestComposeVariables(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	details := types.ConfigDetails{
		WorkingDir:  root,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(root, "docker-compose.yml")}},
		Environment: types.Mapping{"HOST_PORT": "9090", "IMAGE": "registry.example/stitch:v1", "VLLM_TAG": "v0.12.0",
			"MODEL_ID": "Qwen/Qwen3-14B", "MAX_MODEL_LEN": "16384"},
	}
	p, err := loader.LoadWithContext(context.Background(), details, func(o *loader.Options) {
		o.SetProjectName("stitch", true)
		o.Profiles = []string{"gpu"}
	})
	if err != nil {
		t.Fatal(err)
	}
	st, v, m := service(t, p, "stitch"), service(t, p, "vllm"), service(t, p, "model")
	if len(st.Ports) != 1 || st.Ports[0].Published != "9090" {
		t.Errorf("HOST_PORT=9090: stitch ports %+v", st.Ports)
	}
	if st.Image != "registry.example/stitch:v1" {
		t.Errorf("IMAGE: stitch image %q", st.Image)
	}
	if v.Image != "vllm/vllm-openai:v0.12.0" {
		t.Errorf("VLLM_TAG: vllm image %q", v.Image)
	}
	if got := flagValue(v.Command, "--max-model-len"); got != "16384" {
		t.Errorf("MAX_MODEL_LEN: --max-model-len %q", got)
	}
	if got := env(m, "MODEL_ID"); got != "Qwen/Qwen3-14B" {
		t.Errorf("MODEL_ID: model service downloads %q", got)
	}
}
