package jinja_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/stitchllm/stitch/render/jinja"
)

func Example() {
	tpl, err := jinja.Parse("chat", `
{%- for m in messages %}
<|{{ m.role }}|>{{ m.content }}
{%- endfor %}
{%- if tools %} tools={{ tools | tojson }}{% endif %}
{{- ' today=' ~ strftime_now('%d %b %Y') }}`, jinja.Options{
		Now: func() time.Time { return time.Date(2025, 3, 7, 0, 0, 0, 0, time.UTC) },
	})
	if err != nil {
		panic(err)
	}
	vars, err := jinja.VarsFromJSON([]byte(`{
		"messages": [{"role": "user", "content": "Hi <b>"}],
		"tools": [{"name": "f", "parameters": {"scale": 1.0, "eps": 1e-07, "big": 12345678901234567890}}]
	}`))
	if err != nil {
		panic(err)
	}
	out, err := tpl.Execute(vars)
	if err != nil {
		panic(err)
	}
	fmt.Println(out)
	// Output:
	// <|user|>Hi <b> tools=[{"name": "f", "parameters": {"scale": 1.0, "eps": 1e-07, "big": 12345678901234567890}}] today=07 Mar 2025
}

func ExampleError() {
	tpl, err := jinja.Parse("strict", `{{ raise_exception('no messages') if not messages }}`, jinja.Options{})
	if err != nil {
		panic(err)
	}
	_, err = tpl.Execute(map[string]jinja.Value{"messages": jinja.List()})
	fmt.Println(err)
	var e *jinja.Error
	if errors.As(err, &e) {
		fmt.Println(e.Kind == jinja.KindTemplate)
	}
	// Output:
	// TemplateError: no messages (in strict:1)
	// true
}

func ExampleValue() {
	m := jinja.NewMap()
	m.Set("b", jinja.Int(1))
	m.Set("a", jinja.List(jinja.String("x"), jinja.None(), jinja.Bool(true)))
	tpl, _ := jinja.Parse("v", `{{ v }} {{ v | tojson }} {{ v.a[0] }}`, jinja.Options{})
	out, _ := tpl.Execute(map[string]jinja.Value{"v": jinja.MapValue(m)})
	fmt.Println(out)
	// Output:
	// {'b': 1, 'a': ['x', None, True]} {"b": 1, "a": ["x", null, true]} x
}
