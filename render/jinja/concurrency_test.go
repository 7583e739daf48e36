package jinja

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestConcurrentExecute runs one parsed template from several goroutines
// (run with -race to check that Execute does not mutate shared state).
func TestConcurrentExecute(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join(goldenDir, "templates", "qwen3.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(goldenDir, "messages", "05_tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	vars, err := VarsFromJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := Parse("qwen3", string(src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := tpl.Execute(vars)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				got, err := tpl.Execute(vars)
				if err != nil || got != want {
					errs <- "concurrent Execute differs"
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}
