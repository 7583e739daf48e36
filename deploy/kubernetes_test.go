package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
	// InferencePool
	TargetPorts []struct {
		Number int `yaml:"number"`
	} `yaml:"targetPorts"`
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
			FieldRef *struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
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
	return loadManifestsIn(t, "kubernetes")
}

// loadManifestsIn decodes every YAML document of dir's *.yaml files, by file name.
func loadManifestsIn(t *testing.T, dir string) map[string][]k8sObject {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s/: %v", dir, err)
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

// llmdTopologies are the deploy/kubernetes/llm-d directories, each one kustomization.
var llmdTopologies = []string{"gateway", "sidecar"}

// eppConfig is the subset of llm-d's EndpointPickerConfig the examples use.
type eppConfig struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Plugins    []struct {
		Type       string         `yaml:"type"`
		Name       string         `yaml:"name"`
		Parameters map[string]any `yaml:"parameters"`
	} `yaml:"plugins"`
	DataLayer struct {
		Sources []struct {
			PluginRef  string `yaml:"pluginRef"`
			Extractors []struct {
				PluginRef string `yaml:"pluginRef"`
			} `yaml:"extractors"`
		} `yaml:"sources"`
	} `yaml:"dataLayer"`
	SchedulingProfiles []struct {
		Name    string `yaml:"name"`
		Plugins []struct {
			PluginRef string  `yaml:"pluginRef"`
			Weight    float64 `yaml:"weight"`
		} `yaml:"plugins"`
	} `yaml:"schedulingProfiles"`
}

// param returns the parameter at path (keys of nested maps) of the first plugin of type typ.
func (c eppConfig) param(typ string, path ...string) any {
	for _, p := range c.Plugins {
		if p.Type != typ {
			continue
		}
		var v any = p.Parameters
		for _, k := range path {
			m, _ := v.(map[string]any)
			v = m[k]
		}
		return v
	}
	return nil
}

func loadEPPConfig(t *testing.T, dir string) eppConfig {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "epp-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c eppConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("%s/epp-config.yaml: %v", dir, err)
	}
	if c.APIVersion != "llm-d.ai/v1alpha1" || c.Kind != "EndpointPickerConfig" {
		t.Errorf("%s/epp-config.yaml: %s %s, want llm-d.ai/v1alpha1 EndpointPickerConfig", dir, c.APIVersion, c.Kind)
	}
	return c
}

// TestKubernetesLLMDKustomizations checks that each llm-d topology's kustomization names only files
// it has, and that every YAML document there is well formed.
func TestKubernetesLLMDKustomizations(t *testing.T) {
	for _, topo := range llmdTopologies {
		t.Run(topo, func(t *testing.T) {
			dir := filepath.Join("kubernetes", "llm-d", topo)
			var k struct {
				Resources []string `yaml:"resources"`
				Patches   []struct {
					Path string `yaml:"path"`
				} `yaml:"patches"`
				ConfigMapGenerator []struct {
					Name  string   `yaml:"name"`
					Files []string `yaml:"files"`
				} `yaml:"configMapGenerator"`
			}
			data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(data, &k); err != nil {
				t.Fatal(err)
			}
			listed := slices.Clone(k.Resources)
			for _, p := range k.Patches {
				listed = append(listed, p.Path)
			}
			for _, g := range k.ConfigMapGenerator {
				listed = append(listed, g.Files...)
			}
			for _, f := range listed {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Errorf("kustomization lists %s: %v", f, err)
				}
				if strings.Contains(f, "..") {
					t.Errorf("kustomization lists %s: kustomize loads nothing outside its directory", f)
				}
			}
			for file, objs := range loadManifestsIn(t, dir) {
				if file != "kustomization.yaml" && file != "epp-config.yaml" && !slices.Contains(listed, file) {
					t.Errorf("%s is in %s but not in its kustomization", file, dir)
				}
				for i, o := range objs {
					if o.Kind == "Kustomization" {
						continue
					}
					// An EndpointPickerConfig is a file the EPP reads, not an object: it has no name.
					if o.APIVersion == "" || o.Kind == "" || (o.Metadata.Name == "" && o.Kind != "EndpointPickerConfig") {
						t.Errorf("%s document %d: apiVersion %q kind %q name %q, want all set", file, i, o.APIVersion, o.Kind, o.Metadata.Name)
					}
				}
			}
			// The EPP mounts the generated ConfigMap and reads the file by its name.
			epp := findObject(t, loadManifestsIn(t, dir), "Deployment", "qwen3-epp")
			c := containerNamed(t, epp.Spec.Template.Spec.Containers, "epp")
			if got := flagValue(c.Args, "--config-file"); got != "/config/epp-config.yaml" {
				t.Errorf("epp --config-file = %q, want /config/epp-config.yaml", got)
			}
			if len(k.ConfigMapGenerator) != 1 || k.ConfigMapGenerator[0].Name != "qwen3-epp-config" {
				t.Errorf("configMapGenerator = %+v, want qwen3-epp-config", k.ConfigMapGenerator)
			}
		})
	}
}

// TestKubernetesLLMD checks what must agree between stitch, vLLM and the router in each topology:
// stitch's flags and STITCH_* variables exist, vLLM's block size and hash seed are the router's,
// KV events go where the router listens, and every plugin a profile names is declared.
func TestKubernetesLLMD(t *testing.T) {
	flags := map[string]bool{}
	for _, f := range configs.FlagNames() {
		flags[f] = true
	}
	known := knownEnv()
	for _, topo := range llmdTopologies {
		t.Run(topo, func(t *testing.T) {
			dir := filepath.Join("kubernetes", "llm-d", topo)
			m := loadManifestsIn(t, dir)
			cfg := loadEPPConfig(t, dir)

			declared := map[string]bool{}
			for _, p := range cfg.Plugins {
				declared[p.Type] = true
				if p.Name != "" {
					declared[p.Name] = true
				}
			}
			var refs []string
			for _, s := range cfg.DataLayer.Sources {
				refs = append(refs, s.PluginRef)
				for _, e := range s.Extractors {
					refs = append(refs, e.PluginRef)
				}
			}
			for _, p := range cfg.SchedulingProfiles {
				for _, r := range p.Plugins {
					refs = append(refs, r.PluginRef)
				}
			}
			for _, r := range refs {
				if !declared[r] {
					t.Errorf("epp-config.yaml references %q, which no plugin declares", r)
				}
			}
			for _, want := range []string{"token-producer", "precise-prefix-cache-producer", "prefix-cache-scorer", "queue-scorer", "kv-cache-utilization-scorer", "max-score-picker"} {
				if !declared[want] {
					t.Errorf("epp-config.yaml lacks %s", want)
				}
			}

			var stitch, vllm []k8sContainer
			for _, objs := range m {
				for _, o := range objs {
					if o.Kind != "Deployment" {
						continue
					}
					for _, c := range o.Spec.Template.Spec.Containers {
						switch c.Name {
						case "stitch":
							stitch = append(stitch, c)
						case "vllm":
							vllm = append(vllm, c)
						}
					}
				}
			}
			if len(stitch) != 1 || len(vllm) != 1 {
				t.Fatalf("%d stitch and %d vllm containers, want one of each", len(stitch), len(vllm))
			}
			st, vl := stitch[0], vllm[0]
			if len(st.Args) == 0 || st.Args[0] != "serve" {
				t.Fatalf("stitch args = %q, want serve …", st.Args)
			}
			for _, f := range flagNames(st.Args[1:]) {
				if !flags[f] {
					t.Errorf("stitch serve has no --%s", f)
				}
			}
			for _, e := range st.Env {
				if strings.HasPrefix(e.Name, "STITCH_") && !known[e.Name] {
					t.Errorf("%s is not a stitch setting", e.Name)
				}
			}

			if got := flagValue(vl.Args, "--prefix-caching-hash-algo"); got != "sha256_cbor" {
				t.Errorf("vllm --prefix-caching-hash-algo = %q, want sha256_cbor", got)
			}
			if got, want := flagValue(vl.Args, "--block-size"), fmt.Sprint(cfg.param("precise-prefix-cache-producer", "tokenProcessorConfig", "blockSize")); got != want {
				t.Errorf("vllm --block-size %q, router blockSize %q: llm-d's block keys would cover other token spans", got, want)
			}
			if got, want := vl.env("PYTHONHASHSEED"), fmt.Sprint(cfg.param("precise-prefix-cache-producer", "tokenProcessorConfig", "hashSeed")); got != want {
				t.Errorf("vllm PYTHONHASHSEED %q, router hashSeed %q", got, want)
			}
			var ev struct {
				Enable    bool   `json:"enable_kv_cache_events"`
				Publisher string `json:"publisher"`
				Endpoint  string `json:"endpoint"`
				Topic     string `json:"topic"`
			}
			if err := json.Unmarshal([]byte(flagValue(vl.Args, "--kv-events-config")), &ev); err != nil {
				t.Fatalf("vllm --kv-events-config: %v", err)
			}
			port := fmt.Sprint(cfg.param("precise-prefix-cache-producer", "kvEventsConfig", "podDiscoveryConfig", "socketPort"))
			if !ev.Enable || ev.Publisher != "zmq" || ev.Endpoint != "tcp://*:"+port {
				t.Errorf("kv events %+v, want enabled zmq on tcp://*:%s (the router's socketPort)", ev, port)
			}
			if filter, _ := cfg.param("precise-prefix-cache-producer", "kvEventsConfig", "topicFilter").(string); !strings.HasPrefix(ev.Topic, filter) {
				t.Errorf("kv events topic %q does not start with the router's topicFilter %q", ev.Topic, filter)
			}
			if strings.Contains(ev.Topic, "$(POD_IP)") {
				found := false
				for _, e := range vl.Env {
					found = found || e.Name == "POD_IP" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP"
				}
				if !found {
					t.Error("kv events topic uses $(POD_IP), but vllm has no POD_IP from status.podIP")
				}
			}
			if !strings.HasSuffix(ev.Topic, "@"+flagValue(vl.Args, "--served-model-name")) {
				t.Errorf("kv events topic %q, want kv@<pod>@%s", ev.Topic, flagValue(vl.Args, "--served-model-name"))
			}

			pool := findObject(t, m, "InferencePool", "qwen3")
			poolPort := ""
			if len(pool.Spec.TargetPorts) == 1 {
				poolPort = fmt.Sprint(pool.Spec.TargetPorts[0].Number)
			}
			metricsPath, _ := cfg.param("metrics-data-source", "path").(string)
			switch topo {
			case "gateway":
				// stitch is its own tier: it talks to the gateway, and the pool is vLLM's port.
				if up := st.env(configs.EnvName("upstream")); strings.Contains(up, "127.0.0.1") || up == "" {
					t.Errorf("gateway stitch upstream = %q, want the llm-d gateway", up)
				}
				if poolPort != flagValue(vl.Args, "--port") {
					t.Errorf("InferencePool target port %q, want vLLM's %q", poolPort, flagValue(vl.Args, "--port"))
				}
				if metricsPath != "/metrics" {
					t.Errorf("metrics-data-source path %q, want vLLM's /metrics", metricsPath)
				}
			case "sidecar":
				// The pool is stitch's port; the router scrapes it, and stitch passes vLLM's metrics through there.
				if poolPort != strings.TrimPrefix(st.env(configs.EnvName("listen")), ":") {
					t.Errorf("InferencePool target port %q, want stitch's (%s)", poolPort, st.env(configs.EnvName("listen")))
				}
				if got := st.env(configs.EnvName("upstream-metrics-path")); got != metricsPath || got == "" {
					t.Errorf("STITCH_UPSTREAM_METRICS_PATH %q, router metrics path %q: want equal", got, metricsPath)
				}
				url, _ := cfg.param("token-producer", "vllm", "url").(string)
				render := findObject(t, m, "Service", "qwen3-render")
				if len(render.Spec.Ports) == 0 || !strings.HasSuffix(url, fmt.Sprintf("qwen3-render:%d", render.Spec.Ports[0].Port)) || render.Spec.Ports[0].Port != 8080 {
					t.Errorf("token producer url %q, render Service ports %+v: want stitch's port 8080", url, render.Spec.Ports)
				}
				if !declared["session-affinity-scorer"] {
					t.Error("sidecar epp-config.yaml lacks the session-affinity-scorer fallback")
				}
				// The copy keeps the base sidecar's stitch settings.
				base := containerNamed(t, findObject(t, loadManifests(t), "Deployment", "qwen3").Spec.Template.Spec.Containers, "stitch")
				for _, e := range base.Env {
					if e.Value != st.env(e.Name) {
						t.Errorf("%s: base %q, llm-d sidecar copy %q", e.Name, e.Value, st.env(e.Name))
					}
				}
			}
		})
	}
}
