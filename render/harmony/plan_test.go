package harmony

import (
	"slices"
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
