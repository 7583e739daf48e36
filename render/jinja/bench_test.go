package jinja

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// cpuTime returns the process's user+system CPU time in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkRenderQwen3 renders the Qwen3 chat template for a 20-message
// conversation with 3 tools (the budget is 200 µs).
func BenchmarkRenderQwen3(b *testing.B) {
	src, err := os.ReadFile(filepath.Join(goldenDir, "templates", "qwen3.jinja"))
	if err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(goldenDir, "messages", "06_long_tools.json"))
	if err != nil {
		b.Fatal(err)
	}
	vars, err := VarsFromJSON(data)
	if err != nil {
		b.Fatal(err)
	}
	msgs := vars["messages"].list()
	if len(msgs) < 20 || len(vars["tools"].list()) != 3 {
		b.Fatalf("want >= 20 messages and 3 tools, have %d and %d", len(msgs), len(vars["tools"].list()))
	}
	vars["messages"] = List(msgs[:20]...)
	t, err := Parse("qwen3", string(src), Options{})
	if err != nil {
		b.Fatal(err)
	}
	out, err := t.Execute(vars)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		if _, err := t.Execute(vars); err != nil {
			b.Fatal(err)
		}
	}
	// Process CPU time per render: closer to the cost on an idle machine
	// than wall time when other processes share the cores.
	if n := b.N; n > 0 {
		b.ReportMetric(float64(cpuTime()-start)/float64(n)/1e3, "cpu-µs/op")
	}
}

func BenchmarkParseQwen3(b *testing.B) {
	src, err := os.ReadFile(filepath.Join(goldenDir, "templates", "qwen3.jinja"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("qwen3", string(src), Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// agentConversation builds an agent-shaped conversation of rounds (user, assistant tool call,
// tool output of outputBytes), with the Qwen3 template's tools.
func agentConversation(rounds, outputBytes int, nudge bool) []Value {
	msg := func(kv ...Value) Value {
		m := NewMap()
		for i := 0; i < len(kv); i += 2 {
			m.Set(kv[i].s, kv[i+1])
		}
		return MapValue(m)
	}
	out := make([]byte, outputBytes)
	for i := range out {
		out[i] = "abc def\n{}\"x!"[i%13]
	}
	msgs := []Value{msg(String("role"), String("system"), String("content"), String("You are a coding agent."))}
	for r := range rounds {
		if r == 0 || nudge {
			msgs = append(msgs, msg(String("role"), String("user"), String("content"), String("Run the next tool.")))
		}
		args := NewMap()
		args.Set("path", String("src/main.go"))
		args.Set("line", Int(int64(r)))
		fn := NewMap()
		fn.Set("arguments", MapValue(args))
		fn.Set("name", String("read_file"))
		call := NewMap()
		call.Set("id", String("call_"+itoa(r)))
		call.Set("function", MapValue(fn))
		call.Set("type", String("function"))
		msgs = append(msgs, msg(String("role"), String("assistant"), String("content"), String(""), String("tool_calls"), List(MapValue(call))))
		msgs = append(msgs, msg(String("role"), String("tool"), String("content"), String(string(out)), String("tool_call_id"), String("call_"+itoa(r))))
	}
	return msgs
}

// BenchmarkExecuteMemo renders a 100k-token-sized agent conversation (28 rounds of 8 KB tool
// outputs) after its previous turn: without a memo, and replaying from the previous turn's memo
// (with and without a new user message, which moves Qwen3's last query index).
func BenchmarkExecuteMemo(b *testing.B) {
	src, err := os.ReadFile(filepath.Join(goldenDir, "templates", "qwen3.jinja"))
	if err != nil {
		b.Fatal(err)
	}
	t, err := Parse("qwen3", string(src), Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, nudge := range []bool{false, true} {
		msgs := agentConversation(28, 8000, nudge)
		prevN := len(msgs) - 2
		if nudge {
			prevN--
		}
		vars := map[string]Value{"messages": List(msgs...), "add_generation_prompt": Bool(true)}
		prevVars := map[string]Value{"messages": List(msgs[:prevN]...), "add_generation_prompt": Bool(true)}
		_, memo, err := t.ExecuteMemo(prevVars, nil)
		if err != nil {
			b.Fatal(err)
		}
		name := "tool_round"
		if nudge {
			name = "user_nudge"
		}
		b.Run("turn="+name+"/memo=off", func(b *testing.B) {
			for b.Loop() {
				if _, err := t.Execute(vars); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("turn="+name+"/memo=on", func(b *testing.B) {
			for b.Loop() {
				if _, _, err := t.ExecuteMemo(vars, memo); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
