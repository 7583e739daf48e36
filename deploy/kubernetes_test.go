package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/stitchllm/stitch/configs"
)

// The subset of the Kubernetes objects the sidecar example uses.
type k8sObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec       k8sSpec           `yaml:"spec"`
	StringData map[string]string `yaml:"stringData"`
}

type k8sSpec struct {
	Selector struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	} `yaml:"selector"`
	Template struct {
		Metadata struct {
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"metadata"`
		Spec k8sPodSpec `yaml:"spec"`
	} `yaml:"template"`
	// Service
	Ports []struct {
		Name       string `yaml:"name"`
		Port       int    `yaml:"port"`
		TargetPort string `yaml:"targetPort"`
	} `yaml:"ports"`
}

type k8sPodSpec struct {
	InitContainers []k8sContainer `yaml:"initContainers"`
	Containers     []k8sContainer `yaml:"containers"`
	Volumes        []struct {
		Name   string `yaml:"name"`
		Secret *struct {
			SecretName string `yaml:"secretName"`
		} `yaml:"secret"`
	} `yaml:"volumes"`
}

type k8sContainer struct {
	Name  string   `yaml:"name"`
	Image string   `yaml:"image"`
	Args  []string `yaml:"args"`
	Env   []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	StartupProbe   *k8sProbe `yaml:"startupProbe"`
	ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
	LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
	Resources      struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext *struct {
		RunAsNonRoot           bool `yaml:"runAsNonRoot"`
		ReadOnlyRootFilesystem bool `yaml:"readOnlyRootFilesystem"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type k8sProbe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
}

func (c k8sContainer) env(name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// mountFor returns the volume mounted at the longest mount path that is a prefix of path.
func (c k8sContainer) mountFor(path string) (volume, mountPath string) {
	for _, m := range c.VolumeMounts {
		if (path == m.MountPath || strings.HasPrefix(path, m.MountPath+"/")) && len(m.MountPath) > len(mountPath) {
			volume, mountPath = m.Name, m.MountPath
		}
	}
	return volume, mountPath
}

// loadManifests decodes every YAML document of the kubernetes/*.yaml files, by file name.
func loadManifests(t *testing.T) map[string][]k8sObject {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("kubernetes", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in kubernetes/: %v", err)
	}
	out := map[string][]k8sObject{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var o k8sObject
			if err := dec.Decode(&o); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out[filepath.Base(f)] = append(out[filepath.Base(f)], o)
		}
	}
	return out
}

func findObject(t *testing.T, m map[string][]k8sObject, kind, name string) k8sObject {
	t.Helper()
	for _, objs := range m {
		for _, o := range objs {
			if o.Kind == kind && o.Metadata.Name == name {
				return o
			}
		}
	}
	t.Fatalf("no %s %q in kubernetes/", kind, name)
	return k8sObject{}
}

func containerNamed(t *testing.T, cs []k8sContainer, name string) k8sContainer {
	t.Helper()
	for _, c := range cs {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %q", name)
	return k8sContainer{}
}

func TestKubernetesManifestsWellFormed(t *testing.T) {
	for file, objs := range loadManifests(t) {
		for i, o := range objs {
			if o.Kind == "Kustomization" {
				continue
			}
			if o.APIVersion == "" || o.Kind == "" || o.Metadata.Name == "" {
				t.Errorf("%s document %d: apiVersion %q kind %q name %q, want all set", file, i, o.APIVersion, o.Kind, o.Metadata.Name)
			}
		}
	}
	var k struct {
		Resources []string `yaml:"resources"`
	}
	data, err := os.ReadFile(filepath.Join("kubernetes", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	for _, r := range k.Resources {
		if _, err := os.Stat(filepath.Join("kubernetes", r)); err != nil {
			t.Errorf("kustomization lists %s: %v", r, err)
		}
	}
	if slices.Contains(k.Resources, "secrets.example.yaml") {
		t.Error("kustomization applies the example Secrets: their placeholders must never reach a cluster")
	}
}

func TestKubernetesSidecar(t *testing.T) {
	m := loadManifests(t)
	d := findObject(t, m, "Deployment", "qwen3")
	pod := d.Spec.Template.Spec
	for k, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Metadata.Labels[k] != v {
			t.Errorf("selector %s=%s does not match the pod labels", k, v)
		}
	}
	vllm := containerNamed(t, pod.Containers, "vllm")
	st := containerNamed(t, pod.Containers, "stitch")

	t.Run("vllm", func(t *testing.T) {
		for _, flag := range []string{"--enable-prompt-tokens-details", "--served-model-name", "--max-model-len"} {
			if !slices.Contains(vllm.Args, flag) {
				t.Errorf("vllm args lack %s", flag)
			}
		}
		if got := flagValue(vllm.Args, "--prefix-caching-hash-algo"); got != "sha256_cbor" {
			t.Errorf("--prefix-caching-hash-algo = %q, want sha256_cbor", got)
		}
		if seed := vllm.env("PYTHONHASHSEED"); seed == "" {
			t.Error("vllm: PYTHONHASHSEED not pinned")
		}
		if vllm.Resources.Limits["nvidia.com/gpu"] == "" {
			t.Error("vllm: no nvidia.com/gpu limit")
		}
	})

	t.Run("stitch", func(t *testing.T) {
		if len(st.Args) == 0 || st.Args[0] != "serve" {
			t.Fatalf("stitch args = %q, want serve …", st.Args)
		}
		flags := map[string]bool{}
		for _, f := range configs.FlagNames() {
			flags[f] = true
		}
		for _, f := range flagNames(st.Args[1:]) {
			if !flags[f] {
				t.Errorf("stitch serve has no --%s", f)
			}
		}
		known := knownEnv()
		for _, e := range st.Env {
			if strings.HasPrefix(e.Name, "STITCH_") && !known[e.Name] {
				t.Errorf("%s is not a stitch setting", e.Name)
			}
		}
		if got, want := st.env(configs.EnvName("upstream")), "http://127.0.0.1:"+flagValue(vllm.Args, "--port"); got != want {
			t.Errorf("upstream = %q, want %q (vLLM in the same pod)", got, want)
		}
		if got, want := st.env(configs.EnvName("served-model-name")), flagValue(vllm.Args, "--served-model-name"); got != want {
			t.Errorf("stitch serves %q, vllm serves %q", got, want)
		}
		// Same model directory, from the same volume.
		modelDir := st.env(configs.EnvName("model-dir"))
		if modelDir != flagValue(vllm.Args, "--model") {
			t.Errorf("stitch model dir %q, vllm --model %q: they must load the same files", modelDir, flagValue(vllm.Args, "--model"))
		}
		if sv, _ := st.mountFor(modelDir); sv == "" {
			t.Errorf("stitch model dir %q is on no volume", modelDir)
		} else if vv, _ := vllm.mountFor(modelDir); vv != sv {
			t.Errorf("model dir volume: stitch %q, vllm %q", sv, vv)
		}
		port := ""
		for _, p := range st.Ports {
			if p.ContainerPort == 8080 {
				port = p.Name
			}
		}
		if port == "" {
			t.Fatal("stitch exposes no port 8080")
		}
		probes := []struct {
			name  string
			probe *k8sProbe
			path  string
		}{
			{"readiness", st.ReadinessProbe, "/readyz"},
			{"liveness", st.LivenessProbe, "/healthz"},
		}
		for _, p := range probes {
			if p.probe == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port != port {
				t.Errorf("%s probe = %+v, want GET %s on port %s", p.name, p.probe, p.path, port)
			}
		}
		for _, r := range []string{"cpu", "memory"} {
			if st.Resources.Requests[r] == "" {
				t.Errorf("stitch: no %s request", r)
			}
		}
		if st.Resources.Limits["memory"] == "" {
			t.Error("stitch: no memory limit")
		}
		if sc := st.SecurityContext; sc == nil || !sc.RunAsNonRoot || !sc.ReadOnlyRootFilesystem {
			t.Error("stitch: want runAsNonRoot and readOnlyRootFilesystem")
		}
		ann := d.Spec.Template.Metadata.Annotations
		if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/port"] != "8080" || ann["prometheus.io/path"] != "/metrics" {
			t.Errorf("pod annotations %v, want prometheus.io scrape/port 8080/path /metrics", ann)
		}
		if s := findObject(t, m, "Service", "qwen3"); len(s.Spec.Ports) == 0 || s.Spec.Ports[0].TargetPort != port {
			t.Errorf("Service ports %+v, want targetPort %s (stitch, never vLLM)", s.Spec.Ports, port)
		}
	})
}

// TestKubernetesSecrets checks that each secret file stitch is given lives on a mounted Secret whose
// example has the key and the JSON shape stitch reads.
func TestKubernetesSecrets(t *testing.T) {
	m := loadManifests(t)
	d := findObject(t, m, "Deployment", "qwen3")
	st := containerNamed(t, d.Spec.Template.Spec.Containers, "stitch")
	secretOf := map[string]string{} // volume → secret name
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			secretOf[v.Name] = v.Secret.SecretName
		}
	}
	tests := []struct {
		flag   string
		fields []string
	}{
		{"seal-keys", []string{"id", "secret"}},
		{"api-keys", []string{"tenant", "key_sha256"}},
	}
	for _, tt := range tests {
		t.Run(tt.flag, func(t *testing.T) {
			path := st.env(configs.EnvName(tt.flag))
			vol, mountPath := st.mountFor(path)
			name := secretOf[vol]
			if name == "" {
				t.Fatalf("%s=%q is not on a mounted Secret", configs.EnvName(tt.flag), path)
			}
			key := strings.TrimPrefix(path, mountPath+"/")
			data, ok := findObject(t, m, "Secret", name).StringData[key]
			if !ok {
				t.Fatalf("Secret %s has no key %q", name, key)
			}
			var entries []map[string]string
			if err := json.Unmarshal([]byte(data), &entries); err != nil || len(entries) == 0 {
				t.Fatalf("Secret %s/%s = %q: want a JSON list of objects (%v)", name, key, data, err)
			}
			for _, f := range tt.fields {
				if entries[0][f] == "" {
					t.Errorf("Secret %s/%s: entry lacks %q", name, key, f)
				}
			}
		})
	}
	for _, e := range st.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			ref := e.ValueFrom.SecretKeyRef
			if _, ok := findObject(t, m, "Secret", ref.Name).StringData[ref.Key]; !ok {
				t.Errorf("%s: Secret %s has no key %q", e.Name, ref.Name, ref.Key)
			}
		}
	}
}
