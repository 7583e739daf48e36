package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/redis/go-redis/v9"
)

// Issue 31, items 1 and 2, with real processes: two `stitch serve` pods sharing one
// redis-server, in front of one slow `stitch sim`.

// terminalTypes are the event types that end a follower's stream.
var terminalTypes = map[string]bool{
	"response.completed": true, "response.incomplete": true, "response.failed": true, "error": true,
}

// followed is what one follower read: its events' types, the last event, and its error.
type followed struct {
	types []string
	last  responses.ResponseStreamEventUnion
	err   error
}

func (f *followed) String() string {
	return fmt.Sprintf("%d events, last %q (%s), err %v", len(f.types), f.last.Type, f.last.RawJSON(), f.err)
}

// drain reads s to its end.
func drain(s interface {
	Next() bool
	Current() responses.ResponseStreamEventUnion
	Err() error
}, f *followed) {
	for s.Next() {
		f.last = s.Current()
		f.types = append(f.types, f.last.Type)
	}
	f.err = s.Err()
}

// TestCancelIsFinalAcrossPods races cancels through pod B against generations on pod A, the
// cancel sent when the owner's follower sees a given event (from the first delta to the last
// event before the terminal one, where A is storing the response). Whatever the race's outcome,
// the cancel's answer is the truth everywhere: an acknowledged cancel (status cancelled) leaves
// the response cancelled on both pods, not continuable, its conversation untouched, no checkpoint
// or token artifact in Redis, and its stream ended by an event; a cancel that lost answers the
// response's real final state, which both pods retrieve. No sleeps: each step waits on an event.
func TestCancelIsFinalAcrossPods(t *testing.T) {
	cl := startBGCluster(t, "--shutdown-timeout", "20s")
	a, b := newClient(cl.a), newClient(cl.b)
	ctx := testContext(t)
	triggers := []string{"response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done"}
	const races = 40
	var cancelled, lost []string
	for i := range races {
		trigger := triggers[i%len(triggers)]
		// Cancels at the first delta meet a generation far from its end (they are acknowledged
		// however slow the machine); the others race the owner storing the response.
		maxTokens := int64(12)
		if trigger == "response.output_text.delta" {
			maxTokens = 200
		}
		conv, err := b.Conversations.New(ctx, conversations.ConversationNewParams{})
		if err != nil {
			t.Fatal(err)
		}
		r, err := a.Responses.New(ctx, responses.ResponseNewParams{
			Model: modelName, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(fmt.Sprintf("Race %d: tell me a story.", i))},
			Background: openai.Bool(true), MaxOutputTokens: openai.Int(maxTokens), Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortNone},
			Conversation: responses.ResponseNewParamsConversationUnion{OfString: openai.String(conv.ID)},
		})
		if err != nil {
			t.Fatalf("race %d: create: %v", i, err)
		}
		s := a.Responses.GetStreaming(ctx, r.ID, responses.ResponseGetParams{}) // the owner's pod: woken by each write
		var f followed
		for s.Next() {
			f.last = s.Current()
			f.types = append(f.types, f.last.Type)
			if f.last.Type == trigger || terminalTypes[f.last.Type] {
				break
			}
		}
		c, err := b.Responses.Cancel(ctx, r.ID)
		if err != nil {
			t.Fatalf("race %d: cancel on B: %v", i, err)
		}
		drain(s, &f)
		s.Close()
		if f.err != nil || !terminalTypes[f.last.Type] {
			t.Errorf("race %d (%s): the owner's follower ended without a terminal event: %s", i, c.Status, &f)
		}
		status := c.Status
		switch status {
		case responses.ResponseStatusCancelled:
			cancelled = append(cancelled, r.ID)
			if f.last.Type != "error" || f.last.Code != "response_cancelled" {
				t.Errorf("race %d: cancel acknowledged, the stream ended with %s", i, &f)
			}
		case responses.ResponseStatusCompleted, responses.ResponseStatusIncomplete:
			lost = append(lost, r.ID)
			if f.last.Type != "response."+string(status) {
				t.Errorf("race %d: cancel answered %s, the stream ended with %s", i, status, &f)
			}
		default:
			t.Errorf("race %d: cancel answered %q (%s)", i, status, c.RawJSON())
			continue
		}
		for name, cli := range map[string]openai.Client{"A": a, "B": b} {
			got, err := cli.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
			if err != nil || got.Status != status {
				t.Errorf("race %d: cancel answered %s; retrieve on %s: %v %s", i, status, name, err, got.RawJSON())
			}
		}
		page, err := b.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{Limit: param.NewOpt[int64](100)})
		if err != nil {
			t.Fatalf("race %d: conversation items: %v", i, err)
		}
		if status == responses.ResponseStatusCancelled && len(page.Data) != 0 {
			t.Errorf("race %d: cancel acknowledged, yet the conversation holds %d items", i, len(page.Data))
		}
		if status != responses.ResponseStatusCancelled && len(page.Data) == 0 {
			t.Errorf("race %d: the response ended %s, yet the conversation holds nothing", i, status)
		}
		for name, cli := range map[string]openai.Client{"A": a, "B": b} {
			_, err := cli.Responses.New(ctx, responses.ResponseNewParams{Model: modelName, PreviousResponseID: openai.String(r.ID),
				MaxOutputTokens: openai.Int(2), Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Go on.")}})
			switch {
			case status == responses.ResponseStatusCancelled && !isAPIErrorCode(err, 400, "previous_response_not_found"):
				t.Errorf("race %d: cancel acknowledged, yet continuing it on %s answered %v", i, name, err)
			case status != responses.ResponseStatusCancelled && err != nil:
				t.Errorf("race %d: the response ended %s, yet continuing it on %s failed: %v", i, status, name, err)
			}
		}
	}
	// Everything pod A had in flight is over once it has shut down (it waits for its
	// background responses): only then is "nothing was stored" final.
	if err := cl.procA.stop(); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: cl.redis.Addr})
	defer rdb.Close()
	for _, id := range cancelled {
		keys, err := rdb.Keys(ctx, "*"+id+"*").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if !strings.Contains(k, ":run:") && !strings.Contains(k, ":runlog:") {
				t.Errorf("cancelled response %s left %s in Redis (stored or advanced after its cancel was acknowledged)", id, k)
			}
		}
	}
	t.Logf("%d races: %d cancels acknowledged, %d answered the response's final state", races, len(cancelled), len(lost))
	if len(cancelled) == 0 {
		t.Error("no cancel was acknowledged: the races did not cancel anything")
	}
}

func isAPIErrorCode(err error, status int, code string) bool {
	var ae *openai.Error
	return errors.As(err, &ae) && ae.StatusCode == status && ae.Code == code
}

// TestFollowersRideOutRedisStall pauses redis-server (SIGSTOP) under five followers of one
// background response: the create's own stream and a follower on pod A (the owner), two on pod
// B. Each follower's store reads fail; Redis is resumed once every follower has either ended or
// logged that it is retrying, and every stream must then end with a terminal event (here the
// response's own end). In the second part the stall outlasts the followers' bound (the lease,
// 3 s here): each follower ends with an error event carrying the retryable code
// store_unavailable, and a reconnect with starting_after = its sequence_number reaches the end.
func TestFollowersRideOutRedisStall(t *testing.T) {
	for _, past := range []bool{false, true} {
		name := map[bool]string{false: "within_bound", true: "past_bound"}[past]
		t.Run(name, func(t *testing.T) {
			extra := []string{}
			if past {
				extra = append(extra, "--background-lease", "3s")
			}
			cl := startBGCluster(t, extra...)
			a, b := newClient(cl.a), newClient(cl.b)
			ctx := testContext(t)
			params := responses.ResponseNewParams{
				Model: modelName, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Tell me a long story.")},
				Background: openai.Bool(true), MaxOutputTokens: openai.Int(300), Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortNone},
			}
			own := a.Responses.NewStreaming(ctx, params)
			var id string
			for id == "" && own.Next() {
				if ev := own.Current(); ev.Type == "response.created" {
					id = ev.Response.ID
				}
			}
			if id == "" {
				t.Fatalf("no response.created on the create's stream: %v", own.Err())
			}
			type follower struct {
				pod  string
				f    followed
				done chan struct{}
			}
			fs := []*follower{{pod: "A"}, {pod: "A"}, {pod: "B"}, {pod: "B"}, {pod: "B"}}
			var started sync.WaitGroup
			for i, fl := range fs {
				fl.done = make(chan struct{})
				started.Add(1)
				go func() {
					defer close(fl.done)
					if i == 0 { // the create's own stream
						started.Done()
						drain(own, &fl.f)
						return
					}
					cli := map[string]openai.Client{"A": a, "B": b}[fl.pod]
					s := cli.Responses.GetStreaming(ctx, id, responses.ResponseGetParams{})
					once := false
					for s.Next() {
						fl.f.last = s.Current()
						fl.f.types = append(fl.f.types, fl.f.last.Type)
						if !once && fl.f.last.Type == "response.output_text.delta" {
							once = true
							started.Done() // under way
						}
					}
					fl.f.err = s.Err()
					if !once {
						started.Done()
					}
				}()
			}
			started.Wait()
			cl.redis.Pause()
			paused := true
			defer func() {
				if paused {
					cl.redis.Resume()
				}
			}()
			// Resume once every follower either ended (the fault this test guards against, or
			// its bound passed) or logged that it retries the store.
			waitFor(t, "every follower ended or retrying", func() bool {
				retrying := strings.Count(cl.procA.output(), "background follower: the store did not answer") +
					strings.Count(cl.procB.output(), "background follower: the store did not answer")
				ended := 0
				for _, fl := range fs {
					select {
					case <-fl.done:
						ended++
					default:
					}
				}
				if past {
					return ended == len(fs)
				}
				return ended+retrying >= len(fs)
			})
			cl.redis.Resume()
			paused = false
			for i, fl := range fs {
				<-fl.done
				if fl.f.err != nil || !terminalTypes[fl.f.last.Type] {
					t.Errorf("follower %d on pod %s ended without a terminal event: %s", i, fl.pod, &fl.f)
					continue
				}
				if !past {
					if !strings.HasPrefix(fl.f.last.Type, "response.") {
						t.Errorf("follower %d on pod %s: a stall within the bound ended the stream with %s", i, fl.pod, &fl.f)
					}
					continue
				}
				if fl.f.last.Type != "error" || fl.f.last.Code != "store_unavailable" {
					t.Errorf("follower %d on pod %s: past the bound, the stream ended with %s, want error store_unavailable", i, fl.pod, &fl.f)
					continue
				}
				// Resume where it stopped, on the other pod: the stream reaches its end.
				other := map[string]openai.Client{"A": b, "B": a}[fl.pod]
				var again followed
				rctx, cancel := context.WithTimeout(ctx, requestTimeout)
				s := other.Responses.GetStreaming(rctx, id, responses.ResponseGetParams{StartingAfter: openai.Int(fl.f.last.SequenceNumber)})
				drain(s, &again)
				cancel()
				if again.err != nil || !strings.HasPrefix(again.last.Type, "response.") {
					t.Errorf("follower %d resumed after %d: %s", i, fl.f.last.SequenceNumber, &again)
				}
			}
		})
	}
}
