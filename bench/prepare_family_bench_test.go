package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/modeldir"
	"github.com/stitchllm/stitch/render"
)

var nemoFixture struct {
	once sync.Once
	prepFixture
}

// loadNemoFixture is loadFixture for Mistral Nemo (testdata/models/mistral_nemo, the mistral
// tool parser), driven as stitch bench drives it: --follow-up-rate 0, since its template refuses
// a user message after a tool output.
func loadNemoFixture(b testing.TB) *prepFixture {
	nemoFixture.once.Do(func() {
		d, err := modeldir.Open("../testdata/models/mistral_nemo")
		if err != nil {
			nemoFixture.err = err
			return
		}
		m, err := d.Renderer(render.Options{})
		if err != nil {
			nemoFixture.err = err
			return
		}
		w := DefaultWorkload()
		w.FollowUpRate = 0
		nemoFixture.load(m, family.Names{ToolCallParser: "mistral"}.WithDefaults(), w)
	})
	if nemoFixture.err != nil {
		b.Fatal(nemoFixture.err)
	}
	return &nemoFixture.prepFixture
}

// BenchmarkPrepareStepsMistralNemo is BenchmarkPrepareSteps for Mistral Nemo, whose template
// filters the message list three times per render and moves its tools block before each new
// last user message.
func BenchmarkPrepareStepsMistralNemo(b *testing.B) { prepareSteps(b, loadNemoFixture(b)) }

// BenchmarkMistralNemoTemplateTurns times Mistral Nemo's template replaying from the previous
// turn's memo at the 100k continuation, for three kinds of turn: the same conversation again
// (nothing changes: the replay's floor), a tool turn (a tool call and its output appended: the
// system message leaves the previous last user message) and a user turn (a user message appended
// after an answer: the tools block moves before it). Each also without the role alternation
// check (template=no_alternation_check) and without the tools block's placement
// (template=no_tools_placement: no user_messages, no tools block), to show what each costs.
func BenchmarkMistralNemoTemplateTurns(b *testing.B) {
	f := loadNemoFixture(b)
	s := f.inputs[ModeCanonical]["100k"]
	raw, err := os.ReadFile("../testdata/models/mistral_nemo/tokenizer_config.json")
	if err != nil {
		b.Fatal(err)
	}
	var cfg struct {
		ChatTemplate string `json:"chat_template"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		b.Fatal(err)
	}
	orig := cfg.ChatTemplate
	altStart := strings.Index(orig, "{%- for message in loop_messages | rejectattr")
	altEnd := altStart + strings.Index(orig[altStart:], "{%- endfor %}") + len("{%- endfor %}")
	noAlt := orig[:altStart] + orig[altEnd:]
	noTools := strings.Replace(strings.Replace(orig,
		`{%- set user_messages = loop_messages | selectattr("role", "equalto", "user") | list %}`, "", 1),
		"(message == user_messages[-1])", "false", 1)
	d, err := modeldir.Open("../testdata/models/mistral_nemo")
	if err != nil {
		b.Fatal(err)
	}
	items := render.NewItemCache(64 << 20)
	conv, err := render.FromResponses(render.ResponsesInput{Instructions: s.in.Instructions, Items: s.in.Items, Tools: s.in.Tools, Cache: items})
	if err != nil {
		b.Fatal(err)
	}
	msgs := conv.Messages
	lastUser := len(msgs) - 1
	for msgs[lastUser].Role != "user" {
		lastUser--
	}
	if lastUser+1 == len(msgs) {
		b.Skip("the 100k turn ends with a user message")
	}
	for _, v := range []struct{ name, src string }{{"nemo", orig}, {"no_alternation_check", noAlt}, {"no_tools_placement", noTools}} {
		m, err := d.Renderer(render.Options{ChatTemplate: v.src})
		if err != nil {
			b.Fatal(err)
		}
		memoOf := func(msgs []render.Message) *render.RenderMemo {
			_, memo, err := m.RenderTextMemo(render.ChatRequest{Messages: msgs, Tools: conv.Tools, AddGenerationPrompt: true}, nil)
			if err != nil {
				b.Fatal(err)
			}
			return memo
		}
		turns := []struct {
			name       string
			prev, next []render.Message
		}{
			{"same", msgs, msgs},
			{"tool", msgs[:lastUser+1], msgs},
			{"user", msgs[:lastUser], msgs[:lastUser+1]},
		}
		for _, tn := range turns {
			prev := memoOf(tn.prev)
			req := render.ChatRequest{Messages: tn.next, Tools: conv.Tools, AddGenerationPrompt: true}
			want, err := m.RenderText(req)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("template=%s/turn=%s", v.name, tn.name), func(b *testing.B) {
				for b.Loop() {
					text, _, err := m.RenderTextMemo(req, prev)
					if err != nil || text != want {
						b.Fatalf("memo render differs from RenderText (%v)", err)
					}
				}
			})
		}
	}
}

// BenchmarkPrepareMistralNemo is BenchmarkPrepare's continuation at 100k tokens for Mistral Nemo:
// what stitch bench's prep CPU p50 @100k times, and its bound (prepare_bound: tokenizing only the
// text the turn adds to the previous prompt, as stitch bench's prep bound does).
func BenchmarkPrepareMistralNemo(b *testing.B) {
	f := loadNemoFixture(b)
	ctx := context.Background()
	for _, mode := range []Mode{ModeFull, ModeCanonical} {
		s, ok := f.inputs[mode]["100k"]
		if !ok {
			b.Skip("no 100k sample")
		}
		p, stop := f.timing[mode].timing, f.timing[mode].stop
		var ids []uint32
		b.Run(fmt.Sprintf("mode=%s/ctx=100k", mode), func(b *testing.B) {
			for b.Loop() {
				res, _, err := prepareRequest(ctx, p, stop, s.in)
				if err != nil {
					b.Fatal(err)
				}
				ids = res.IDs
			}
		})
		if mode == ModeCanonical {
			text := boundText(ctx, f.timing[mode], s, ids)
			b.Run("bound/ctx=100k", func(b *testing.B) {
				for b.Loop() {
					f.model.Encode(text)
				}
			})
		}
	}
}
