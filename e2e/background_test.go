package e2e

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/stitchllm/stitch/store/redistest"
)

// bgCluster is issue 18's background and conversations stack: one redis-server, one `stitch sim`
// with its latency model on (generations last seconds, so they can be cancelled mid-way), and two
// `stitch serve` replicas sharing --redis and --seal-keys.
type bgCluster struct {
	a, b         string // base URLs
	procA, procB *proc
	redis        *redistest.Server
}

// startBGCluster starts the cluster; extra flags go to both replicas.
func startBGCluster(t *testing.T, extra ...string) *bgCluster {
	t.Helper()
	st := requireStack(t)
	if st.bin == "" {
		t.Skip("external stack (STITCH_E2E_BASE_URL): cannot start Redis-backed replicas")
	}
	rs := redistest.StartServer(t)
	seal, err := filepath.Abs(filepath.Join("testdata", "portable", "seal-keys.json"))
	if err != nil {
		t.Fatal(err)
	}
	procs := newExtraProcs(t)
	sim := procs.start("slow sim", func() (*proc, error) {
		return startReady(st.bin, "sim", "/health", func(addr string) []string {
			return []string{"sim", "--listen", addr, "--served-model-name", modelName, "--output-len", "400",
				"--decode-us-per-token", "5000", "--ttft-base", "1ms", "--prefill-us-per-token", "1"}
		})
	})
	pod := func(name string) *proc {
		dir := filepath.Join(t.TempDir(), "pod-"+name)
		return procs.start("pod "+name, func() (*proc, error) {
			return startReady(st.bin, "serve", "/readyz", func(addr string) []string {
				return append([]string{"serve", "--listen", addr, "--upstream", "http://" + sim.addr, "--served-model-name", modelName,
					"--data-dir", dir, "--redis", "redis://" + rs.Addr, "--seal-keys", seal}, extra...)
			})
		})
	}
	a, b := pod("A"), pod("B")
	return &bgCluster{a: "http://" + a.addr, b: "http://" + b.addr, procA: a, procB: b, redis: rs}
}

// TestBackgroundReplicaDies: a replica killed (SIGKILL) or shut down (SIGTERM, grace over)
// mid-generation leaves its background response failed, as the other replica reads it; the
// other replica's follower sees the stream end with response.failed.
func TestBackgroundReplicaDies(t *testing.T) {
	for _, kill := range []bool{true, false} {
		name := map[bool]string{true: "sigkill", false: "sigterm"}[kill]
		t.Run(name, func(t *testing.T) {
			cl := startBGCluster(t, "--background-lease", "2s", "--shutdown-timeout", "1s")
			a, b := newClient(cl.a), newClient(cl.b)
			ctx := testContext(t)
			r, err := a.Responses.New(ctx, responses.ResponseNewParams{
				Model: modelName, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Tell me a long story.")},
				Background: openai.Bool(true), Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortNone},
			})
			if err != nil {
				t.Fatal(err)
			}
			s := b.Responses.GetStreaming(ctx, r.ID, responses.ResponseGetParams{})
			for s.Next() {
				if s.Current().Type == "response.output_text.delta" {
					break // under way
				}
			}
			if kill {
				if err := cl.procA.cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
				<-cl.procA.done
			} else if err := cl.procA.stop(); err != nil {
				t.Fatal(err)
			}
			last := ""
			for s.Next() {
				last = s.Current().Type
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			if last != "response.failed" {
				t.Fatalf("the follower's stream ended with %q, want response.failed", last)
			}
			got, err := b.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
			if err != nil || got.Status != responses.ResponseStatusFailed {
				t.Fatalf("retrieve on B: %v %s", err, got.RawJSON())
			}
		})
	}
}

// TestBackgroundReplicasGoSDK: with the Go SDK, a background response created on replica A is
// followed (Responses.GetStreaming with starting_after), retrieved and cancelled on replica B;
// a conversation made on A is continued and edited on B.
func TestBackgroundReplicasGoSDK(t *testing.T) {
	cl := startBGCluster(t)
	a, b := newClient(cl.a), newClient(cl.b)
	ctx := testContext(t)

	t.Run("background_follow_on_other_replica", func(t *testing.T) {
		r, err := a.Responses.New(ctx, responses.ResponseNewParams{
			Model: modelName, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello.")},
			Background: openai.Bool(true), MaxOutputTokens: openai.Int(40), Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortNone},
		})
		if err != nil {
			t.Fatal(err)
		}
		if !r.Background || (r.Status != responses.ResponseStatusInProgress && r.Status != responses.ResponseStatusQueued) {
			t.Fatalf("background create: status %q background %v", r.Status, r.Background)
		}
		s := b.Responses.GetStreaming(ctx, r.ID, responses.ResponseGetParams{StartingAfter: openai.Int(1)})
		var types []string
		want := int64(2)
		for s.Next() {
			ev := s.Current()
			if ev.SequenceNumber != want {
				t.Fatalf("event %s has sequence_number %d, want %d", ev.Type, ev.SequenceNumber, want)
			}
			want++
			types = append(types, ev.Type)
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if len(types) == 0 || !strings.HasPrefix(types[len(types)-1], "response.") || slices.Contains(types, "response.created") {
			t.Fatalf("events after 1: %v", types)
		}
		got, err := b.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
		if err != nil || (got.Status != responses.ResponseStatusCompleted && got.Status != responses.ResponseStatusIncomplete) || got.OutputText() == "" {
			t.Fatalf("retrieve on B: %v %s", err, got.RawJSON())
		}
	})

	t.Run("cancel_on_other_replica", func(t *testing.T) {
		r, err := a.Responses.New(ctx, responses.ResponseNewParams{
			Model: modelName, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Tell me a long story.")},
			Background: openai.Bool(true), Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortNone},
		})
		if err != nil {
			t.Fatal(err)
		}
		s := b.Responses.GetStreaming(ctx, r.ID, responses.ResponseGetParams{})
		for s.Next() {
			if s.Current().Type == "response.output_text.delta" {
				break // under way
			}
		}
		c, err := b.Responses.Cancel(ctx, r.ID)
		if err != nil || c.Status != responses.ResponseStatusCancelled {
			t.Fatalf("cancel on B: %v %+v", err, c)
		}
		for s.Next() {
			if s.Current().Type == "response.completed" {
				t.Fatal("a cancelled response completed")
			}
		}
		s.Close()
		got, err := a.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
		if err != nil || got.Status != responses.ResponseStatusCancelled {
			t.Fatalf("retrieve on A after cancel: %v %+v", err, got)
		}
		again, err := a.Responses.Cancel(ctx, r.ID)
		if err != nil || again.Status != responses.ResponseStatusCancelled {
			t.Fatalf("second cancel: %v %+v", err, again)
		}
	})

	t.Run("conversations_across_replicas", func(t *testing.T) {
		conv, err := a.Conversations.New(ctx, conversations.ConversationNewParams{
			Metadata: shared.Metadata{"topic": "e2e"},
			Items: []responses.ResponseInputItemUnionParam{
				responses.ResponseInputItemParamOfMessage("You answer briefly.", responses.EasyInputMessageRoleDeveloper),
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := b.Conversations.Get(ctx, conv.ID); err != nil || got.ID != conv.ID {
			t.Fatalf("conversations.get on B: %v %+v", err, got)
		}
		if got, err := b.Conversations.Update(ctx, conv.ID, conversations.ConversationUpdateParams{Metadata: shared.Metadata{"topic": "updated"}}); err != nil {
			t.Fatalf("conversations.update: %v %+v", err, got)
		}
		cp := responses.ResponseNewParamsConversationUnion{OfString: openai.String(conv.ID)}
		r1, err := a.Responses.New(ctx, responses.ResponseNewParams{Model: modelName, Conversation: cp, MaxOutputTokens: openai.Int(30),
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("What is the capital of France?")}})
		if err != nil {
			t.Fatal(err)
		}
		r2, err := b.Responses.New(ctx, responses.ResponseNewParams{Model: modelName, MaxOutputTokens: openai.Int(30),
			Conversation: responses.ResponseNewParamsConversationUnion{OfConversationObject: &responses.ResponseConversationParam{ID: conv.ID}},
			Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("And of Italy?")}})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = r1, r2
		page, err := b.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{Order: conversations.ItemListParamsOrderAsc, Limit: param.NewOpt[int64](100)})
		if err != nil {
			t.Fatal(err)
		}
		var texts []string
		for _, it := range page.Data {
			if m := it.AsMessage(); it.Type == "message" && m.Role == "user" {
				for _, c := range m.Content {
					texts = append(texts, c.Text)
				}
			}
		}
		if strings.Join(texts, "|") != "What is the capital of France?|And of Italy?" {
			t.Fatalf("user turns in the conversation: %q (%d items)", texts, len(page.Data))
		}
		added, err := a.Conversations.Items.New(ctx, conv.ID, conversations.ItemNewParams{Items: []responses.ResponseInputItemUnionParam{
			responses.ResponseInputItemParamOfMessage("One more thing.", responses.EasyInputMessageRoleUser),
		}})
		if err != nil || len(added.Data) != 1 {
			t.Fatalf("items.create: %v %+v", err, added)
		}
		id := added.Data[0].ID
		if got, err := b.Conversations.Items.Get(ctx, conv.ID, id, conversations.ItemGetParams{}); err != nil || got.ID != id {
			t.Fatalf("items.get: %v %+v", err, got)
		}
		if _, err := b.Conversations.Items.Delete(ctx, conv.ID, id); err != nil {
			t.Fatalf("items.delete: %v", err)
		}
		if _, err := a.Responses.New(ctx, responses.ResponseNewParams{Model: modelName, Conversation: cp,
			PreviousResponseID: openai.String(r2.ID), Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("x")}}); !isAPIError(err, 400) {
			t.Fatalf("conversation with previous_response_id: %v, want 400", err)
		}
		if del, err := b.Conversations.Delete(ctx, conv.ID); err != nil || !del.Deleted {
			t.Fatalf("conversations.delete: %v %+v", err, del)
		}
		if _, err := a.Conversations.Get(ctx, conv.ID); !isAPIError(err, 404) {
			t.Fatalf("get after delete: %v, want 404", err)
		}
	})
}

// TestBackgroundReplicasNode runs e2e/node/background.mjs (the Node SDK) against replica A, with
// replica B's URL for the cross-replica steps.
func TestBackgroundReplicasNode(t *testing.T) {
	node := requireNode(t)
	cl := startBGCluster(t)
	runNodeScript(t, &stack{baseURL: cl.a}, node, "background.mjs", "STITCH_BASE_URL_B="+cl.b+"/v1")
}

func isAPIError(err error, status int) bool {
	var ae *openai.Error
	return errors.As(err, &ae) && ae.StatusCode == status
}

// TestBackgroundEmbedded: the suite's single replica (embedded store, no Redis) serves a
// background response, its replayed stream and a conversation through the Go SDK.
func TestBackgroundEmbedded(t *testing.T) {
	st := requireStack(t)
	c := st.client()
	ctx := testContext(t)
	r, err := c.Responses.New(ctx, responses.ResponseNewParams{
		Model: modelName, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello.")},
		Background: openai.Bool(true), Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortNone},
	})
	if err != nil || !r.Background {
		t.Fatalf("background create: %v", err)
	}
	s := c.Responses.GetStreaming(ctx, r.ID, responses.ResponseGetParams{})
	var n int64
	last := ""
	for s.Next() {
		if ev := s.Current(); ev.SequenceNumber != n {
			t.Fatalf("event %s has sequence_number %d, want %d", ev.Type, ev.SequenceNumber, n)
		}
		n++
		last = s.Current().Type
	}
	if err := s.Err(); err != nil || (last != "response.completed" && last != "response.incomplete") {
		t.Fatalf("stream: %v, last event %q", err, last)
	}
	conv, err := c.Conversations.New(ctx, conversations.ConversationNewParams{})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{"Hello.", "Again."} {
		if _, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: modelName, MaxOutputTokens: openai.Int(20),
			Conversation: responses.ResponseNewParamsConversationUnion{OfString: openai.String(conv.ID)},
			Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String(in)}}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := c.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{Limit: param.NewOpt[int64](100)})
	if err != nil || len(page.Data) < 4 {
		t.Fatalf("conversation items: %v (%d)", err, len(page.Data))
	}
}
