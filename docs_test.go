package main

import (
	"bytes"
	"context"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"

	"github.com/stitchllm/stitch/configs"
	"github.com/stitchllm/stitch/store"
)

// The docs-completeness tests: docs/operator-guide.md must document every flag, STITCH_* variable,
// YAML key, metric and artifact outcome the code has, and nothing the code no longer has. They read
// the flags from the binary itself (`stitch <command> --help`) and from configs, so a new flag
// fails here until it is documented.

const operatorGuide = "docs/operator-guide.md"

func readDoc(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// helpFlags runs `stitch <cmd> --help` and returns each flag with the default the help prints
// ("" when the flag's default is its zero value, which flag.PrintDefaults omits).
func helpFlags(t *testing.T, cmd string) map[string]string {
	t.Helper()
	var out, errOut bytes.Buffer
	env := cliEnv{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut}
	if code := run(context.Background(), env, []string{cmd, "--help"}); code != 0 {
		t.Fatalf("stitch %s --help exited %d: %s", cmd, code, errOut.String())
	}
	flags := map[string]string{}
	usage := map[string]string{}
	current := ""
	for line := range strings.Lines(out.String()) {
		line = strings.TrimRight(line, "\n")
		if rest, ok := strings.CutPrefix(line, "  -"); ok {
			name, _, _ := strings.Cut(rest, " ")
			current = strings.TrimLeft(name, "-")
			flags[current] = ""
			continue
		}
		if current != "" && strings.HasPrefix(line, "    \t") {
			usage[current] += strings.TrimPrefix(line, "    \t")
		}
	}
	if len(flags) == 0 {
		t.Fatalf("stitch %s --help listed no flags:\n%s", cmd, out.String())
	}
	// flag.PrintDefaults ends the usage with "(default X)", X quoted for the flag package's strings.
	defaultRE := regexp.MustCompile(`\(default (.+)\)$`)
	for name, u := range usage {
		if m := defaultRE.FindStringSubmatch(u); m != nil {
			d := m[1]
			if uq, err := strconv.Unquote(d); err == nil {
				d = uq
			}
			flags[name] = d
		}
	}
	return flags
}

// docRow is one table row of the guide that documents a flag.
type docRow struct {
	cells []string // trimmed, backticks kept
	line  int
}

// flagRows returns the rows "| `--flag` | …" of the level-2 section whose heading is heading.
func flagRows(t *testing.T, doc, heading string) map[string]docRow {
	t.Helper()
	rows := map[string]docRow{}
	in, found := false, false
	for i, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "## ") {
			in = line == heading
			found = found || in
			continue
		}
		if !in || !strings.HasPrefix(line, "| `--") {
			continue
		}
		var cells []string
		for c := range strings.SplitSeq(strings.Trim(line, "|"), "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		name := strings.Trim(cells[0], "`")
		name, _, _ = strings.Cut(strings.TrimPrefix(name, "--"), " ")
		if _, dup := rows[name]; dup {
			t.Errorf("%s:%d: --%s documented twice under %q", operatorGuide, i+1, name, heading)
		}
		rows[name] = docRow{cells: cells, line: i + 1}
	}
	if !found {
		t.Fatalf("%s has no section %q", operatorGuide, heading)
	}
	return rows
}

// sameDefault reports whether the documented default cell states the default the help prints.
func sameDefault(cell, def string) bool {
	for i, span := range strings.Split(cell, "`") {
		if i%2 == 1 && span == def { // a code span states it exactly
			return true
		}
	}
	for _, f := range strings.FieldsFunc(cell, func(r rune) bool { return r == '`' || r == ' ' || r == '(' || r == ')' || r == ',' }) {
		if f == def {
			return true
		}
		a, errA := time.ParseDuration(f)
		b, errB := time.ParseDuration(def)
		if errA == nil && errB == nil && a == b {
			return true
		}
	}
	return false
}

// mentions reports whether doc contains word as a whole flag or variable name (so --mode is not
// found inside --model-dir, nor STITCH_MODE inside STITCH_MODEL_DIR).
func mentions(doc, word string) bool {
	return regexp.MustCompile(regexp.QuoteMeta(word) + `([^A-Za-z0-9_-]|$)`).MatchString(doc)
}

func checkFlagTable(t *testing.T, cmd string, code map[string]string, defaultCol int, envCol int) {
	t.Helper()
	doc := readDoc(t, operatorGuide)
	rows := flagRows(t, doc, "## `stitch "+cmd+"`")
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range code {
			if !yield(k) {
				return
			}
		}
	}) {
		def := code[name]
		row, ok := rows[name]
		if !ok {
			t.Errorf("%s: stitch %s --%s is not documented (add a row to the table under \"## `stitch %s`\")", operatorGuide, cmd, name, cmd)
			continue
		}
		if !mentions(doc, "--"+name) {
			t.Errorf("%s: --%s not mentioned", operatorGuide, name)
		}
		if len(row.cells) <= defaultCol {
			t.Errorf("%s:%d: --%s row has %d cells", operatorGuide, row.line, name, len(row.cells))
			continue
		}
		if def != "" && !sameDefault(row.cells[defaultCol], def) {
			t.Errorf("%s:%d: --%s documents default %s, the binary says %q", operatorGuide, row.line, name, row.cells[defaultCol], def)
		}
		if envCol >= 0 {
			if want := "`" + configs.EnvName(name) + "`"; row.cells[envCol] != want {
				t.Errorf("%s:%d: --%s documents environment %s, want %s", operatorGuide, row.line, name, row.cells[envCol], want)
			}
		}
	}
	for name, row := range rows {
		if _, ok := code[name]; !ok {
			t.Errorf("%s:%d: documents --%s, which stitch %s does not have", operatorGuide, row.line, name, cmd)
		}
	}
}

func TestOperatorGuideServeFlags(t *testing.T) {
	code := helpFlags(t, "serve")
	for _, name := range configs.FlagNames() {
		if _, ok := code[name]; !ok {
			code[name] = "" // in configs but not in --help: still must be documented
		}
	}
	checkFlagTable(t, "serve", code, 3, 1)

	doc := readDoc(t, operatorGuide)
	for name := range code {
		if env := configs.EnvName(name); !mentions(doc, env) {
			t.Errorf("%s: %s (the environment form of --%s) is not documented", operatorGuide, env, name)
		}
	}
}

func TestOperatorGuideSimFlags(t *testing.T) {
	checkFlagTable(t, "sim", helpFlags(t, "sim"), 1, -1)
}

func TestOperatorGuideBenchFlags(t *testing.T) {
	checkFlagTable(t, "bench", helpFlags(t, "bench"), 1, -1)
}

// yamlKeys lists the configuration file's keys as dotted paths ("server.listen", "models[].dir").
func yamlKeys(typ reflect.Type, prefix string) []string {
	var keys []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == "-" || tag == "" || !f.IsExported() {
			continue
		}
		path := prefix + tag
		ft := f.Type
		switch {
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct && ft.Elem().PkgPath() == typ.PkgPath():
			keys = append(keys, yamlKeys(ft.Elem(), path+"[].")...)
		case ft.Kind() == reflect.Struct && ft.PkgPath() == typ.PkgPath():
			keys = append(keys, yamlKeys(ft, path+".")...)
		default:
			keys = append(keys, path)
		}
	}
	return keys
}

func TestOperatorGuideYAMLKeys(t *testing.T) {
	doc := readDoc(t, operatorGuide)
	keys := yamlKeys(reflect.TypeFor[configs.Config](), "")
	if len(keys) < 10 {
		t.Fatalf("found only %d YAML keys in configs.Config: %v", len(keys), keys)
	}
	for _, k := range keys {
		if !strings.Contains(doc, "`"+k+"`") {
			t.Errorf("%s: YAML key `%s` is not documented", operatorGuide, k)
		}
	}
}

// sourceFiles walks the module's non-test Go files outside testdata, tools and node_modules.
func sourceFiles(t *testing.T, fn func(path, src string)) {
	t.Helper()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "testdata", "tools", "node_modules", ".git", "e2e":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fn(path, string(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestOperatorGuideMetrics(t *testing.T) {
	doc := readDoc(t, operatorGuide)
	// Literal names: Name: "stitch_…" in *Opts structs and prometheus.NewDesc("stitch_…", …).
	metricRE := regexp.MustCompile(`(?:Name:\s*|NewDesc\(\s*)"(stitch_[a-z0-9_]*[a-z0-9])"`)
	found := map[string]string{}
	wired := false
	sourceFiles(t, func(path, src string) {
		for _, m := range metricRE.FindAllStringSubmatch(src, -1) {
			found[m[1]] = path
		}
		// stitch serve registers it through stack.NewArtifacts.
		if (filepath.Dir(path) == "." || filepath.Dir(path) == "stack") && strings.Contains(src, "store.NewCollector(") {
			wired = true
		}
	})
	// store.Collector builds its names from a prefix: ask it, once stitch serve registers it.
	if wired {
		for _, name := range storeCollectorMetrics(t) {
			found[name] = "store/metrics.go"
		}
	}
	// The list, so that a change in how metrics are declared cannot empty the check.
	for _, name := range []string{"stitch_artifact_resolutions_total", "stitch_audit_mismatch_total", "stitch_prompt_tokens_total",
		"stitch_prepare_seconds", "stitch_responses_total", "stitch_http_requests_total"} {
		if _, ok := found[name]; !ok {
			t.Errorf("metric %s not found in the sources: did its declaration change?", name)
		}
	}
	for name, path := range found {
		if !strings.Contains(doc, "| `"+name+"` |") {
			t.Errorf("%s: metric %s (declared in %s) has no row in the metrics table", operatorGuide, name, path)
		}
	}
	rowRE := regexp.MustCompile("(?m)^\\| `(stitch_[a-z0-9_]+)` \\|")
	for _, m := range rowRE.FindAllStringSubmatch(doc, -1) {
		if _, ok := found[m[1]]; !ok {
			t.Errorf("%s: documents metric %s, which no longer exists in the code", operatorGuide, m[1])
		}
	}
}

// storeCollectorMetrics returns the metric names store.Collector describes.
func storeCollectorMetrics(t *testing.T) []string {
	t.Helper()
	sealer, err := store.NewSealer([]store.SealKey{{ID: "docs", Secret: make([]byte, 32)}}, store.SealerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan *prometheus.Desc, 64)
	store.NewCollector(store.NewTiered(store.TieredOptions{Sealer: sealer})).Describe(ch)
	close(ch)
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	var names []string
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			names = append(names, m[1])
		}
	}
	if len(names) == 0 {
		t.Fatal("store.Collector describes no metrics")
	}
	return names
}

func TestOperatorGuideOutcomes(t *testing.T) {
	doc := readDoc(t, operatorGuide)
	outcomeRE := regexp.MustCompile(`\bOutcome[A-Z]\w*\s*(?:Outcome\s*)?=\s*"([a-z_]+)"`)
	var outcomes []string
	sourceFiles(t, func(path, src string) {
		if filepath.Dir(path) != "prepare" { // the engine declares them (prepare.Outcome)
			return
		}
		for _, m := range outcomeRE.FindAllStringSubmatch(src, -1) {
			outcomes = append(outcomes, m[1])
		}
	})
	if len(outcomes) < 8 {
		t.Fatalf("found %d artifact outcomes in prepare/ (%v), want at least the 8 of docs/design.md", len(outcomes), outcomes)
	}
	for _, o := range outcomes {
		if !strings.Contains(doc, "| `"+o+"` |") {
			t.Errorf("%s: artifact outcome %q has no row in the outcomes table", operatorGuide, o)
		}
	}
}

// TestDocLinks checks that relative links in the docs point at files that exist.
func TestDocLinks(t *testing.T) {
	linkRE := regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)
	for _, path := range []string{operatorGuide, "docs/user-guide.md", "deploy/kubernetes/README.md"} {
		doc := readDoc(t, path)
		for _, m := range linkRE.FindAllStringSubmatch(doc, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(path), target)); err != nil {
				t.Errorf("%s: broken link %s", path, target)
			}
		}
	}
}

// TestComposeSimFlags checks that docker-compose.yml runs `stitch sim` with flags it has (the serve
// side is checked against configs in deploy/compose_test.go; sim's flags live in this package).
func TestComposeSimFlags(t *testing.T) {
	var compose struct {
		Services map[string]struct {
			Command []string `yaml:"command"`
		} `yaml:"services"`
	}
	data, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &compose); err != nil {
		t.Fatal(err)
	}
	flags := helpFlags(t, "sim")
	sims := 0
	for name, s := range compose.Services {
		if len(s.Command) == 0 || s.Command[0] != "sim" {
			continue
		}
		sims++
		for _, a := range s.Command[1:] {
			if !strings.HasPrefix(a, "-") {
				continue
			}
			f, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if _, ok := flags[f]; !ok {
				t.Errorf("docker-compose.yml service %s: stitch sim has no --%s", name, f)
			}
		}
	}
	if sims == 0 {
		t.Error("docker-compose.yml runs no `stitch sim` service")
	}
}

// TestOperatorGuideYAMLColumn checks the serve table's YAML key column: setting the documented key
// in a config file must give the same configuration as setting the flag to the same value.
func TestOperatorGuideYAMLColumn(t *testing.T) {
	rows := flagRows(t, readDoc(t, operatorGuide), "## `stitch serve`")
	// Candidate values, tried in order until the flag accepts one that differs from the default.
	candidates := []string{"17", "640", "0.5", "true", "17s", "exact", "json", "debug", "http://docs.invalid:17", "/docs/sentinel"}
	dir := t.TempDir()
	base, err := configs.Load("stitch serve", nil, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for name, row := range rows {
		key := strings.Trim(row.cells[2], "`")
		if name == "config" || key == "—" {
			continue
		}
		var viaFlag *configs.Config
		value := ""
		for _, c := range candidates {
			cfg, err := configs.Load("stitch serve", []string{"--" + name + "=" + c}, func(string) string { return "" }, io.Discard)
			if err == nil && !reflect.DeepEqual(cfg, base) {
				viaFlag, value = cfg, c
				break
			}
		}
		if viaFlag == nil {
			t.Errorf("--%s: no candidate value changes the configuration; extend the test's candidates", name)
			continue
		}
		file := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(file, []byte(yamlFor(key, value)), 0o644); err != nil {
			t.Fatal(err)
		}
		viaFile, err := configs.Load("stitch serve", []string{"--config", file}, func(string) string { return "" }, io.Discard)
		if err != nil {
			t.Errorf("%s:%d: --%s documents YAML key %s, but a file setting it to %s fails: %v", operatorGuide, row.line, name, key, value, err)
			continue
		}
		if !reflect.DeepEqual(viaFile, viaFlag) {
			t.Errorf("%s:%d: --%s documents YAML key %s, but setting that key to %s is not the same as the flag", operatorGuide, row.line, name, key, value)
		}
	}
}

// yamlFor writes a config file that sets the dotted key ("server.listen", "models[0].dir") to value.
func yamlFor(key, value string) string {
	scalar := value
	if strings.ContainsAny(value, ":#") {
		scalar = strconv.Quote(value)
	}
	var b strings.Builder
	prefix, indent := "", ""
	parts := strings.Split(key, ".")
	for i, p := range parts {
		name, seq := strings.CutSuffix(p, "[0]")
		switch {
		case seq:
			b.WriteString(prefix + name + ":\n")
			prefix, indent = indent+"  - ", indent+"    "
		case i == len(parts)-1:
			b.WriteString(prefix + name + ": " + scalar + "\n")
		default:
			b.WriteString(prefix + name + ":\n")
			indent += "  "
			prefix = indent
		}
	}
	return b.String()
}

// TestOperatorGuideOtherCommands checks that the "Other commands" table names every flag of the
// small tools (serve, sim and bench have their own sections).
func TestOperatorGuideOtherCommands(t *testing.T) {
	doc := readDoc(t, operatorGuide)
	rowOf := map[string]string{}
	for line := range strings.Lines(doc) {
		if rest, ok := strings.CutPrefix(line, "| `stitch "); ok {
			name, _, _ := strings.Cut(rest, "`")
			rowOf[name] = line
		}
	}
	for _, cmd := range []string{"tokenize", "render"} {
		row, ok := rowOf[cmd]
		if !ok {
			t.Errorf("%s: no row for stitch %s under \"Other commands\"", operatorGuide, cmd)
			continue
		}
		for name := range helpFlags(t, cmd) {
			if !mentions(row, "`--"+name) {
				t.Errorf("%s: the stitch %s row does not name --%s", operatorGuide, cmd, name)
			}
		}
	}
}

// TestCommentPaths checks that the repository files Go comments cite (docs/design.md, a
// testdata README, another package's file) exist, in test files and e2e too: a comment that
// sends the reader to a file the repository lacks is worse than none. A path is looked up from
// the repository root, then from the citing file's directory. Files of other repositories are
// cited by URL (a path after a '/' is not taken for one of ours).
func TestCommentPaths(t *testing.T) {
	pathRE := regexp.MustCompile(`(?:^|[^\w/.-])((?:docs|testdata|deploy|configs|server|stack|store|stream|render|prepare|family|sim|bench|fleet|upstream|middleware|internal|tools|e2e|\.ci)/[\w./-]*\w\.(?:md|go|json|jsonl|yaml|yml|txt|mjs|js|py|proto)(?:\.gz)?)\b`)
	placeholder := regexp.MustCompile(`(^|/)[A-Z_]+(/|$)`) // testdata/models/NAME/tokenizer.json
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", ".git", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, cg := range f.Comments {
			for _, m := range pathRE.FindAllStringSubmatch(cg.Text(), -1) {
				cited := strings.TrimRight(m[1], ".")
				if placeholder.MatchString(cited) {
					continue
				}
				checked++
				if _, err := os.Stat(cited); err == nil {
					continue
				}
				if _, err := os.Stat(filepath.Join(filepath.Dir(path), cited)); err == nil {
					continue
				}
				t.Errorf("%s: a comment cites %s, which the repository lacks", path, cited)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Fatalf("checked %d cited paths; the pattern no longer finds them", checked)
	}
}
