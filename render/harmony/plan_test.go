package harmony

import (
	"crypto/sha256"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestPlanGolden: on every golden case, the plan's messages encoded one by one, then the
// generation prompt, are openai_harmony's ids; each message's MessageItems entry names its item;
// the digests of two plans agree exactly up to the first message whose render differs.
func TestPlanGolden(t *testing.T) {
	enc := testEncoder(t)
	var cases []goldenCase
	var renders []goldenRender
	readJSON(t, "cases.json", &cases)
	readJSON(t, "golden.json", &renders)
	var prev *Plan
	var prevIDs [][]uint32
	for i, c := range cases {
		req, err := RequestFromBody([]byte(c.Request))
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		conv, err := FromResponses(req, Options{StartDate: c.Options.StartDate, InstructionsInSystem: c.Options.InstructionsInSystem})
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if len(conv.MessageItems) != len(conv.Messages) {
			t.Fatalf("%s: %d message items for %d messages", c.Name, len(conv.MessageItems), len(conv.Messages))
		}
		last := -1
		for j, it := range conv.MessageItems {
			preamble := j == 0 || j == 1 && conv.Messages[1].Role == RoleDeveloper && it < 0
			if (it < 0) != preamble || it >= len(req.Items) || it >= 0 && it <= last {
				t.Errorf("%s: message %d (%s) has item %d", c.Name, j, conv.Messages[j].Role, it)
			}
			last = max(last, it)
		}
		p := enc.Plan(conv.Messages, RenderOptions{})
		digests, err := p.Digests()
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		var ids []uint32
		var per [][]uint32
		for j := range p.Len() {
			n := len(ids)
			if ids, err = p.AppendMessage(ids, j); err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			per = append(per, ids[n:])
		}
		ids = enc.AppendGenerationPrompt(ids)
		if !slices.Equal(ids, renders[i].IDs) {
			t.Errorf("%s: plan ids differ from openai_harmony's", c.Name)
		}
		if prev != nil { // digests agree exactly while the messages' ids do
			pd, _ := prev.Digests()
			same := true
			for j := range min(len(pd), len(digests)) {
				same = same && slices.Equal(prevIDs[j], per[j])
				if (pd[j] == digests[j]) && !same {
					t.Errorf("%s vs previous case: message %d digests equal, ids differ", c.Name, j)
				}
			}
		}
		prev, prevIDs = p, per
	}
}

// TestMessageDigestsFrom: turn after turn of a growing agent conversation (tool rounds, a final
// answer that drops the analysis before it, a new question, a change of effort), with and
// without an item cache, MessageDigestsFrom(previous turn's state) gives MessageDigests'
// digests, and resumes (hashes less than the whole history) on the turns that only append.
func TestMessageDigestsFrom(t *testing.T) {
	enc := testEncoder(t)
	var items []string
	for r := range 4 {
		items = append(items,
			fmt.Sprintf(`{"type":"reasoning","content":[{"type":"reasoning_text","text":"think %d"}]}`, r),
			fmt.Sprintf(`{"type":"function_call","name":"f","arguments":"{\"n\":%d}","call_id":"c%d"}`, r, r),
			fmt.Sprintf(`{"type":"function_call_output","call_id":"c%d","output":"result %d\nwith \"quotes\""}`, r, r))
		if r%2 == 1 {
			items = append(items, `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}`,
				fmt.Sprintf(`{"role":"user","content":"next question %d"}`, r))
		}
	}
	for _, cached := range []bool{false, true} {
		var cache *ItemCache
		if cached {
			cache = NewItemCache(1 << 20)
		}
		var prev *DigestState
		resumed := 0
		for n := 1; n <= len(items); n++ {
			effort := "low"
			if n > len(items)-3 {
				effort = "high" // the system message changes: nothing resumes
			}
			body := fmt.Sprintf(`{"input":[{"role":"user","content":"q"},%s],"reasoning":{"effort":%q},"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}]}`,
				strings.Join(items[:n], ","), effort)
			req, err := RequestFromBody([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Cache = cache
			conv, err := FromResponses(req, Options{StartDate: "2025-01-01"})
			if err != nil {
				t.Fatalf("turn %d: %v", n, err)
			}
			p := enc.Plan(conv.Messages, RenderOptions{})
			wantPrefix, wantEach, err := p.MessageDigests()
			if err != nil {
				t.Fatal(err)
			}
			if p.resume(sha256.New(), prev) > 0 {
				resumed++
			}
			prefix, each, next, err := p.MessageDigestsFrom(prev)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(prefix, wantPrefix) || !slices.Equal(each, wantEach) {
				t.Fatalf("cached=%v turn %d: digests resumed from the previous turn differ from a full pass", cached, n)
			}
			prev = next
		}
		if resumed < len(items)/2 {
			t.Errorf("cached=%v: %d of %d turns resumed", cached, resumed, len(items))
		}
	}
}

// TestSameMessageCoversEveryField guards sameMessage: a field added to a message type must be
// compared there too (the counts below are the fields it compares).
func TestSameMessageCoversEveryField(t *testing.T) {
	for _, c := range []struct {
		v    any
		want int
	}{{Message{}, 8}, {SystemContent{}, 6}, {DeveloperContent{}, 2}, {ToolDescription{}, 3}} {
		if n := reflect.TypeOf(c.v).NumField(); n != c.want {
			t.Errorf("%T has %d fields, sameMessage compares %d", c.v, n, c.want)
		}
	}
}
