//go:build !stitchjinja

package render

import "errors"

// Placeholder until render/jinja lands: the glue in template.go needs it.

const templateEngineReady = false

type compiledTemplate interface {
	execute(v *templateVars) (string, error)
}

type stubTemplate struct{}

func compileTemplate(name, source string, opts Options) (compiledTemplate, error) {
	return stubTemplate{}, nil
}

func (stubTemplate) execute(v *templateVars) (string, error) {
	return "", errors.New("template engine not built in yet")
}
