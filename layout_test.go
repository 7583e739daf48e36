package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPackageLayering checks the import rules docs/design.md states for the request flow: the
// template and stream layers know nothing of HTTP or the server, and the configuration needs
// nothing of the packages it configures. Only non-test files count.
func TestPackageLayering(t *testing.T) {
	const module = "github.com/stitchllm/stitch/"
	imports := map[string]map[string]bool{} // package dir -> imported paths
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if imports[dir] == nil {
			imports[dir] = map[string]bool{}
		}
		for _, im := range f.Imports {
			p, err := strconv.Unquote(im.Path.Value)
			if err != nil {
				return err
			}
			imports[dir][p] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	under := func(dir, root string) bool { return dir == root || strings.HasPrefix(dir, root+"/") }
	rules := []struct {
		pkgs   []string // package trees the rule covers
		banned func(imp string) bool
		why    string
	}{
		{[]string{"render", "stream", "family", "prepare", "store", "configs"},
			func(imp string) bool {
				return imp == "net/http" || imp == module+"server" || imp == module+"middleware" || imp == module+"stack"
			},
			"below the HTTP layer: no net/http, server, middleware or the composition root (stack)"},
		{[]string{"configs"},
			func(imp string) bool {
				return strings.HasPrefix(imp, module) && !strings.HasPrefix(imp, module+"internal/")
			},
			"the configuration imports no package it configures (shared types live in internal/)"},
		{[]string{"bench"},
			func(imp string) bool { return imp == module+"server" },
			"the bench assembles its servers through the composition root (stack), as stitch serve does"},
	}
	for _, r := range rules {
		for dir, ims := range imports {
			covered := false
			for _, root := range r.pkgs {
				covered = covered || under(dir, root)
			}
			if !covered {
				continue
			}
			for imp := range ims {
				if r.banned(imp) {
					t.Errorf("%s imports %s: %s", dir, imp, r.why)
				}
			}
		}
	}
	if len(imports["render"]) == 0 || len(imports["configs"]) == 0 || len(imports["bench"]) == 0 {
		t.Fatalf("walked no render, configs or bench sources (%d dirs): run from the repository root", len(imports))
	}
}
