package bench

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Workload is the seeded agentic workload every mode runs. The zero value is not useful; start
// from [DefaultWorkload] or [QuickWorkload].
type Workload struct {
	// Sessions is the number of independent conversations.
	Sessions int `json:"sessions"`
	// Turns is the number of requests per session (each one POST /v1/responses).
	Turns int `json:"turns"`
	// Concurrency is how many sessions run at once.
	Concurrency int `json:"concurrency"`
	// Seed draws every tool output, user message and the simulator's answers.
	Seed int64 `json:"seed"`
	// Drift is the simulator's probability of answering with a non-canonical tokenization.
	Drift float64 `json:"drift"`
	// ToolOutputTokens is the mean size of a function_call_output in tokens (roughly; sizes are
	// uniform in [T/3, 5T/3], converted to bytes at the generator's measured bytes per token).
	ToolOutputTokens int `json:"tool_output_tokens"`
	// FollowUpRate is the probability that a tool output comes with a user nudge naming the next
	// tool (another tool round) rather than alone (then the model answers in text and the next
	// request is a new user turn).
	FollowUpRate float64 `json:"follow_up_rate"`
	// ReasoningOffEvery turns reasoning off (reasoning.effort "none") in every n-th session
	// (0: never). Default workloads use 2: half the sessions.
	ReasoningOffEvery int `json:"reasoning_off_every"`
	// Model is the served model name.
	Model string `json:"model"`
	// MaxModelLen is the simulator's and the proxy's context length in tokens.
	MaxModelLen int `json:"max_model_len"`
	// KVBlocks is the simulator's KV cache capacity in 16-token blocks. Defaults hold every
	// session's context, so the hit ratio reflects prompts, not eviction.
	KVBlocks int `json:"kv_blocks"`
	// TTFTBase, PrefillPerToken and DecodePerToken are the simulator's latency model (time to
	// first token = TTFTBase + PrefillPerToken × uncached prompt tokens).
	TTFTBase        time.Duration `json:"ttft_base_ns"`
	PrefillPerToken time.Duration `json:"prefill_per_token_ns"`
	DecodePerToken  time.Duration `json:"decode_per_token_ns"`
	// OutputLen is the simulator's mean plain-text answer length in tokens.
	OutputLen int `json:"output_len"`
}

// DefaultWorkload is the full run: 6 sessions × 36 requests, 3 at a time, contexts growing past
// 100k tokens. It takes about a minute on two cores.
func DefaultWorkload() Workload {
	return Workload{
		Sessions: 6, Turns: 36, Concurrency: 3, Seed: 1, Drift: 0.2,
		ToolOutputTokens: 3500, FollowUpRate: 0.75, ReasoningOffEvery: 2,
		Model: "qwen3", MaxModelLen: 262144, KVBlocks: 262144,
		TTFTBase: 20 * time.Millisecond, PrefillPerToken: 20 * time.Microsecond, OutputLen: 64,
	}
}

// QuickWorkload is the --quick run: under a minute, two of the full run's sessions (same shape,
// contexts growing past 100k tokens), so every table bucket has samples.
func QuickWorkload() Workload {
	w := DefaultWorkload()
	w.Sessions, w.Concurrency = 2, 2
	return w
}

func (w Workload) validate() error {
	switch {
	case w.Sessions < 1, w.Turns < 1, w.Concurrency < 1, w.ToolOutputTokens < 1:
		return fmt.Errorf("%w: sessions, turns, concurrency and tool output tokens must be positive", ErrBadOptions)
	case w.Drift < 0 || w.Drift > 1 || w.FollowUpRate < 0 || w.FollowUpRate > 1:
		return fmt.Errorf("%w: drift and follow-up rate must be within [0, 1]", ErrBadOptions)
	case w.Model == "" || w.MaxModelLen < 1 || w.KVBlocks < 1 || w.OutputLen < 1:
		return fmt.Errorf("%w: model, max model len, kv blocks and output len are required", ErrBadOptions)
	}
	return nil
}

// tool is one function offered to the model, with the kind of output it returns.
type tool struct {
	name, description, param, paramDesc string
	kind                                outputKind
}

type outputKind int

const (
	kindCode outputKind = iota
	kindJSON
	kindLogs
)

var benchTools = []tool{
	{"read_file", "Read a source file of the repository.", "path", "Repository-relative file path.", kindCode},
	{"query_db", "Run a read-only SQL query and return the rows as JSON.", "sql", "The SQL query.", kindJSON},
	{"search_logs", "Search the service logs.", "query", "A log search expression.", kindLogs},
	{"run_tests", "Run the tests of a package and return their output.", "package", "Go package pattern.", kindLogs},
}

// toolsJSON is the Responses tools array every request sends (agents resend it every turn).
func toolsJSON() json.RawMessage {
	var b strings.Builder
	b.WriteByte('[')
	for i, t := range benchTools {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"function","name":%q,"description":%q,"parameters":{"type":"object","properties":{%q:{"type":"string","description":%q}},"required":[%q]}}`,
			t.name, t.description, t.param, t.paramDesc, t.param)
	}
	b.WriteByte(']')
	return json.RawMessage(b.String())
}

const instructions = "You are a careful software engineer working in a large Go repository. Use the tools to inspect code, data and logs before answering. Keep answers short and cite what the tools returned."

// script draws one session's client side: user messages and tool outputs. It depends only on
// the seed and the session index, so every mode replays the same workload.
type script struct {
	r            *rand.Rand
	words        *rand.Zipf
	reasoningOff bool
}

func newScript(w Workload, session int) *script {
	s := &script{r: rand.New(rand.NewPCG(uint64(w.Seed), uint64(session)*0x9E3779B97F4A7C15+1))}
	s.words = rand.NewZipf(s.r, 1.1, 2, vocabularySize-1)
	s.reasoningOff = w.ReasoningOffEvery > 0 && session%w.ReasoningOffEvery == w.ReasoningOffEvery-1
	return s
}

// userMessage returns a user turn that names a tool, so the model calls it.
func (s *script) userMessage(first bool) string {
	t := benchTools[s.r.IntN(len(benchTools))]
	subject := pick(s.r, nouns) + " " + pick(s.r, nouns)
	if first {
		return fmt.Sprintf("We have a bug report about the %s: requests time out under load. Start by using %s to look at the relevant %s.", subject, t.name, t.param)
	}
	return fmt.Sprintf("Thanks. Next, use %s to check the %s and tell me whether it explains the %s problem.", t.name, t.param, subject)
}

// toolOutput returns the output of a call to the named tool, about tokens tokens long.
func (s *script) toolOutput(name string, meanTokens int) string {
	kind := kindLogs
	for _, t := range benchTools {
		if t.name == name {
			kind = t.kind
		}
	}
	lo := max(1, meanTokens/3)
	tokens := lo + s.r.IntN(meanTokens*4/3+1)
	// Bytes per Qwen3 token, measured on this generator: digits are single tokens, so JSON and
	// logs are dense.
	size := tokens * 19 / 10
	if kind == kindCode {
		size = tokens * 29 / 10
	}
	var b strings.Builder
	b.Grow(size + 256)
	g := gen{r: s.r, words: s.words}
	for b.Len() < size {
		switch kind {
		case kindCode:
			g.code(&b)
		case kindJSON:
			g.jsonRow(&b)
		default:
			g.logs(&b)
		}
	}
	return b.String()
}

// vocabularySize is the number of distinct words tool outputs draw from, Zipf-distributed as
// words in real text are: the most frequent are common English and programming words, the tail
// synthetic. Frequent words hit the tokenizer's word cache and are single tokens, rare ones are
// neither — a handful of fixed words would make every full render look cheap.
const vocabularySize = 200_000

var commonWords = strings.Fields(`the of and to in is for that on with as it be by this are from at or an not
was which but can have has if all will one when we more time into other only new some could use than
then its also each these them so been any may two like there first over after most where such same
value error request response server client data file user name type key config cache token session
stream buffer index field state status count limit size offset length path query table record event
message handler context service worker queue retry timeout result output input batch block shard node
cluster region version update delete create read write open close start stop check parse load store
send receive flush merge split route fetch build apply scan sync lock unlock wait run call return get
set list map string int bool byte slice struct func method package import default case switch range
nil true false err ok len cap make append copy panic recover defer go select chan time duration
second millisecond latency total max min avg sum rate hit miss prefix suffix model prompt template`)

var syllables = []string{"ka", "to", "ri", "mel", "san", "dor", "vi", "lu", "pex", "gra", "no", "tem",
	"bro", "sil", "qua", "fen", "ix", "zu", "har", "op", "cle", "wy", "mon", "tra"}

// word returns the i-th word of the vocabulary (distinct for distinct i).
func word(i uint64) string {
	if i < uint64(len(commonWords)) {
		return commonWords[i]
	}
	i -= uint64(len(commonWords))
	var b strings.Builder
	for {
		b.WriteString(syllables[i%uint64(len(syllables))])
		i /= uint64(len(syllables))
		if i == 0 {
			return b.String()
		}
	}
}

// gen writes tool output text from a session's random source.
type gen struct {
	r     *rand.Rand
	words *rand.Zipf
}

func (g gen) word() string { return word(g.words.Uint64()) }

func (g gen) ident() string { return g.word() + title(g.word()) }

var nouns = []string{"cache", "session", "token", "router", "scheduler", "buffer", "request", "stream", "worker",
	"queue", "shard", "replica", "config", "handler", "parser", "index", "snapshot", "lease", "bucket", "tenant"}
var verbs = []string{"load", "store", "flush", "parse", "merge", "split", "route", "drain", "fetch", "renew",
	"encode", "decode", "check", "close", "open", "sync", "apply", "build", "scan", "trim"}
var types = []string{"int", "string", "[]byte", "error", "bool", "time.Duration", "*Entry", "map[string]int", "[]uint32"}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func title(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// code appends one Go-like function with a doc comment.
func (g gen) code(b *strings.Builder) {
	r := g.r
	verb, noun := pick(r, verbs), g.word()
	name := title(verb) + title(noun)
	fmt.Fprintf(b, "// %s %ss the %s of a %s %s and reports how many %s entries changed.\n", name, verb, noun, g.word(), pick(r, nouns), g.word())
	fmt.Fprintf(b, "func (c *%s) %s(ctx context.Context, %s %s, limit int) (int, error) {\n", title(g.word()), name, noun, pick(r, types))
	fmt.Fprintf(b, "\tif limit <= 0 {\n\t\treturn 0, fmt.Errorf(\"%s: limit %%d must be positive\", limit)\n\t}\n", strings.ToLower(name))
	fmt.Fprintf(b, "\tc.mu.Lock()\n\tdefer c.mu.Unlock()\n\tn := 0\n")
	for range 2 + r.IntN(4) {
		switch r.IntN(3) {
		case 0:
			fmt.Fprintf(b, "\tfor i := 0; i < limit && i < len(c.%ss); i++ {\n\t\tif c.%ss[i].%s == nil {\n\t\t\tcontinue\n\t\t}\n\t\tn += c.%s(i, %d)\n\t}\n",
				g.word(), pick(r, nouns), title(g.word()), g.ident(), r.IntN(1000))
		case 1:
			fmt.Fprintf(b, "\tif err := ctx.Err(); err != nil {\n\t\treturn n, fmt.Errorf(\"%s %s: %%w\", err)\n\t}\n", verb, noun)
		default:
			fmt.Fprintf(b, "\t%s := c.%s.%s(%s, time.Duration(%d)*time.Millisecond)\n\tn += len(%s)\n",
				g.ident(), g.word(), title(g.ident()), noun, r.IntN(5000), g.ident())
		}
	}
	b.WriteString("\treturn n, nil\n}\n\n")
}

// jsonRow appends one pretty-printed JSON row (the caller wraps nothing: rows are
// concatenated as a JSON-lines-like listing, as many SQL tools print).
func (g gen) jsonRow(b *strings.Builder) {
	r := g.r
	fmt.Fprintf(b, "{\n  \"id\": %d,\n  \"name\": \"%s-%s-%d\",\n  \"status\": %q,\n  \"owner\": \"%s@example.com\",\n",
		r.IntN(1_000_000), g.word(), g.word(), r.IntN(100), pick(r, []string{"active", "draining", "failed", "pending"}), g.word())
	fmt.Fprintf(b, "  \"tags\": [%q, %q],\n  \"metrics\": {\"p50_ms\": %.2f, \"p99_ms\": %.2f, \"rps\": %d, \"errors\": %d},\n",
		g.word(), g.word(), r.Float64()*50, 50+r.Float64()*900, r.IntN(20000), r.IntN(50))
	fmt.Fprintf(b, "  \"updated_at\": \"2026-%02d-%02dT%02d:%02d:%02dZ\"\n}\n", 1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60))
}

// logs appends a few log lines, now and then with a stack trace.
func (g gen) logs(b *strings.Builder) {
	r := g.r
	for range 4 {
		level := pick(r, []string{"INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"})
		fmt.Fprintf(b, "2026-11-%02dT%02d:%02d:%02d.%03dZ %-5s %s: %s %s method=%s path=/api/v1/%ss/%d status=%d dur=%s req_id=%s\n",
			1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1000), level, g.word(), pick(r, verbs), g.word()+" "+g.word(),
			pick(r, []string{"GET", "POST", "PUT", "DELETE"}), g.word(), r.IntN(100000),
			pick(r, []int{200, 200, 200, 201, 404, 500, 503}), strconv.FormatFloat(r.Float64()*800, 'f', 1, 64)+"ms",
			strconv.FormatUint(r.Uint64(), 36))
		if level == "ERROR" {
			fmt.Fprintf(b, "panic: %s %s: context deadline exceeded\n\ngoroutine %d [running]:\nmain.(*%s).%s(0xc000%05x)\n\t/src/internal/%s/%s.go:%d +0x%x\n",
				pick(r, verbs), g.word(), r.IntN(5000), title(g.word()), title(g.ident()), r.IntN(1<<20),
				g.word(), g.word(), r.IntN(900), r.IntN(4096))
		}
	}
}
