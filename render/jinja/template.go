package jinja

import (
	"sync/atomic"
	"time"
)

// DefaultFuel is the evaluation step budget used when Options.Fuel is 0.
const DefaultFuel = 10_000_000

// Options configures parsing and rendering. The zero value works.
type Options struct {
	// Now returns the time used by strftime_now. Nil means time.Now.
	Now func() time.Time
	// Fuel is the maximum number of evaluation steps (statements, loop
	// iterations and expression nodes) one Execute may take before it
	// fails with KindFuel. 0 means DefaultFuel.
	Fuel int
}

// Template is a parsed template. It is immutable and safe for concurrent
// use by multiple goroutines.
type Template struct {
	name string
	body []node
	opts Options
	// sizeHint is the length of the last output, used to size the next
	// output buffer.
	sizeHint atomic.Int64
}

// Parse parses source as a chat template configured like transformers'
// ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
// extensions=[loopcontrols]). Errors are *Error, usually KindSyntax, or
// KindAssertion for an unknown filter or test outside a conditional.
func Parse(name, source string, opts Options) (*Template, error) {
	toks, err := lex(name, source)
	if err != nil {
		return nil, err
	}
	p := &parser{name: name, toks: toks}
	body, _, err := p.parseBody()
	if err != nil {
		return nil, err
	}
	if err := resolve(name, body); err != nil {
		return nil, err
	}
	markGuards(body)
	return &Template{name: name, body: body, opts: opts}, nil
}

// Name returns the name given to Parse.
func (t *Template) Name() string { return t.name }

// Execute renders the template with vars as its context. vars is only
// read. Errors are *Error naming the template, line and cause.
func (t *Template) Execute(vars map[string]Value) (string, error) {
	return t.execute(vars, nil)
}

func (t *Template) execute(vars map[string]Value, memo *memoState) (string, error) {
	var out *output
	if memo != nil && memo.prev != nil && memo.prev.arena != nil {
		// A continuation shares the memory of the output it replays from (output.go).
		out = newSharedOutput(memo.prev.arena)
	} else {
		out = &output{}
		hint := t.sizeHint.Load() // the last execution's output, of whatever conversation
		if memo != nil && memo.prev != nil {
			// A continuation is at least about as long as the output it replays from: sized for
			// it (and its new turn), the builder never copies the replayed text to grow.
			hint = max(hint, int64(len(memo.prev.text)+len(memo.prev.text)/8))
		}
		size := int(min(hint, 1<<24))
		room := 256
		if memo != nil {
			room = arenaSpare(size) // the output becomes an arena the next turn writes after (output.go)
		}
		out.Grow(size + room)
	}
	fuel := t.opts.Fuel
	if fuel <= 0 {
		fuel = DefaultFuel
	}
	now := time.Now
	if t.opts.Now != nil {
		now = t.opts.Now
	}
	root := &frame{user: vars}
	top := &frame{parent: root}
	ev := &evaluator{t: t, out: out, fuel: fuel, now: now, top: top, memo: memo}
	if memo != nil {
		memo.top, memo.root, memo.main = top, root, out
	}
	if _, err := ev.execBody(t.body, top); err != nil {
		out.abort()
		if e, ok := err.(*Error); ok {
			if e.Name == "" {
				e.Name = t.name
			}
			return "", e
		}
		return "", err
	}
	t.sizeHint.Store(int64(out.Len()))
	if memo == nil {
		return out.String(), nil
	}
	text, arena := out.finish()
	memo.finish(text, arena)
	return text, nil
}
