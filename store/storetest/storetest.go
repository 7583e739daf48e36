// Package storetest holds conformance suites for the store package's
// backends: [Run] for checkpoint stores and [RunArtifacts] for artifact
// stores. Each backend's test calls the suite with a constructor.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stitchllm/stitch/store"
)

// Checkpoints is the contract the suite checks: [store.Checkpoints].
type Checkpoints = store.Checkpoints

// Run checks a checkpoint store. newStore returns a fresh, empty store for
// each subtest (register its cleanup on t).
func Run(t *testing.T, newStore func(t *testing.T) Checkpoints) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s Checkpoints)
	}{
		{"RoundTrip", testRoundTrip},
		{"NotFound", testNotFound},
		{"CrossTenant", testCrossTenant},
		{"Conversation", testConversation},
		{"GetItemsOrderAndMissing", testGetItems},
		{"Overwrite", testOverwrite},
		{"ImmutableItems", testImmutableItems},
		{"History", testHistory},
		{"Delete", testDelete},
		{"DeleteIsTombstone", testTombstone},
		{"InvalidKeys", testInvalidKeys},
		{"Ownership", testOwnership},
		{"CancelledContext", testCancelled},
		{"Large", testLarge},
		{"Concurrent", testConcurrent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, newStore(t))
		})
	}
}

// Sample returns a checkpoint with every field set, and its items, for
// tenant and response id; item ids are derived from id.
func Sample(tenant, id string) (*store.Checkpoint, []store.Item) {
	in := store.Item{ID: "msg_in_" + id, Data: json.RawMessage(`{"type":"message","role":"user","content":[{"type":"input_text","text":"hi <b>&amp; \u00e9"}]}`)}
	out := store.Item{ID: "msg_out_" + id, Data: json.RawMessage(`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hello"}]}`)}
	fc := store.Item{ID: "fc_" + id, Data: json.RawMessage(`{"type":"function_call","name":"get","arguments":"{\"b\":1,\"a\":2}","call_id":"call_1"}`)}
	cp := &store.Checkpoint{
		ID:                  id,
		Tenant:              tenant,
		PreviousID:          "resp_prev",
		Model:               "qwen3",
		Status:              "completed",
		CreatedAt:           time.Date(2026, 11, 29, 7, 30, 1, 123456789, time.UTC),
		InputItemIDs:        []string{in.ID},
		OutputItemIDs:       []string{out.ID, fc.ID},
		ConversationItemIDs: []string{in.ID, out.ID, fc.ID},
		Instructions:        "be brief <ok>",
		Response:            json.RawMessage(`{"id":"` + id + `","object":"response","output":[{"z":1,"a":"<x>"}]}`),
		Request:             json.RawMessage(`{"tools":[{"type":"function","name":"get"}],"reasoning":{"effort":"low"}}`),
		Mode:                store.ModeExact,
		Fingerprint:         [32]byte{1, 2, 3, 31: 9},
		PromptLen:           42,
		GeneratedIDs:        []uint32{0, 1, 127, 128, 16383, 16384, 151643, 1<<32 - 1},
	}
	return cp, []store.Item{in, out, fc}
}

func mustPut(t *testing.T, s Checkpoints, cp *store.Checkpoint, items []store.Item) {
	t.Helper()
	if err := s.PutResponse(t.Context(), cp, items); err != nil {
		t.Fatalf("PutResponse(%q, %q) = %v", cp.Tenant, cp.ID, err)
	}
}

func wantNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("%s = %v, want ErrNotFound", what, err)
	}
}

func testRoundTrip(t *testing.T, s Checkpoints) {
	cp, items := Sample("acme", "resp_1")
	mustPut(t, s, cp, items)
	got, err := s.GetResponse(t.Context(), "acme", "resp_1")
	if err != nil {
		t.Fatalf("GetResponse = %v", err)
	}
	if diff := cmpDiff(cp, got); diff != "" {
		t.Errorf("GetResponse mismatch (-put +got):\n%s", diff)
	}
	gotItems, err := s.GetItems(t.Context(), "acme", cp.ConversationItemIDs)
	if err != nil {
		t.Fatalf("GetItems = %v", err)
	}
	if diff := cmpDiff(items, gotItems); diff != "" {
		t.Errorf("GetItems mismatch (-put +got):\n%s", diff)
	}
	// A minimal checkpoint round-trips too (empty slices read back as nil).
	minimal := &store.Checkpoint{ID: "resp_min", Tenant: "acme", CreatedAt: time.Unix(0, 0).UTC()}
	mustPut(t, s, minimal, nil)
	got, err = s.GetResponse(t.Context(), "acme", "resp_min")
	if err != nil {
		t.Fatalf("GetResponse(minimal) = %v", err)
	}
	if diff := cmpDiff(minimal, got); diff != "" {
		t.Errorf("GetResponse(minimal) mismatch (-put +got):\n%s", diff)
	}
}

func testNotFound(t *testing.T, s Checkpoints) {
	_, err := s.GetResponse(t.Context(), "acme", "resp_nope")
	wantNotFound(t, "GetResponse(unknown)", err)
	_, err = s.GetItems(t.Context(), "acme", []string{"msg_nope"})
	wantNotFound(t, "GetItems(unknown)", err)
	wantNotFound(t, "DeleteResponse(unknown)", s.DeleteResponse(t.Context(), "acme", "resp_nope"))
	got, err := s.GetItems(t.Context(), "acme", nil)
	if err != nil || len(got) != 0 {
		t.Errorf("GetItems(nil) = %v, %v, want empty, nil", got, err)
	}
}

func testCrossTenant(t *testing.T, s Checkpoints) {
	cp, items := Sample("acme", "resp_1")
	mustPut(t, s, cp, items)
	for _, other := range []string{"evil", "acm", "acme ", "ACME"} {
		_, err := s.GetResponse(t.Context(), other, "resp_1")
		wantNotFound(t, fmt.Sprintf("GetResponse(%q, resp_1)", other), err)
		_, err = s.GetItems(t.Context(), other, cp.ConversationItemIDs[:1])
		wantNotFound(t, fmt.Sprintf("GetItems(%q)", other), err)
		wantNotFound(t, fmt.Sprintf("DeleteResponse(%q, resp_1)", other), s.DeleteResponse(t.Context(), other, "resp_1"))
	}
	// The same ids under another tenant are independent records.
	cp2, items2 := Sample("evil", "resp_1")
	cp2.Model = "other"
	items2[0].Data = json.RawMessage(`{"evil":true}`)
	mustPut(t, s, cp2, items2)
	got, err := s.GetResponse(t.Context(), "acme", "resp_1")
	if err != nil || got.Model != "qwen3" {
		t.Errorf("GetResponse(acme) after evil put = %+v, %v; want model qwen3", got, err)
	}
	gotItems, err := s.GetItems(t.Context(), "acme", cp.InputItemIDs)
	if err != nil || string(gotItems[0].Data) != string(items[0].Data) {
		t.Errorf("GetItems(acme) after evil put = %v, %v; want original item", gotItems, err)
	}
}

func testConversation(t *testing.T, s Checkpoints) {
	cp1, items1 := Sample("acme", "resp_1")
	mustPut(t, s, cp1, items1)
	cp2, items2 := Sample("acme", "resp_2")
	cp2.PreviousID = "resp_1"
	cp2.ConversationItemIDs = append(append([]string{}, cp1.ConversationItemIDs...), cp2.ConversationItemIDs...)
	mustPut(t, s, cp2, items2)
	got, err := s.GetResponse(t.Context(), "acme", "resp_2")
	if err != nil {
		t.Fatalf("GetResponse(resp_2) = %v", err)
	}
	all, err := s.GetItems(t.Context(), "acme", got.ConversationItemIDs)
	if err != nil {
		t.Fatalf("GetItems(conversation) = %v", err)
	}
	want := append(append([]store.Item{}, items1...), items2...)
	if diff := cmpDiff(want, all); diff != "" {
		t.Errorf("conversation items mismatch (-want +got):\n%s", diff)
	}
}

func testGetItems(t *testing.T, s Checkpoints) {
	cp, items := Sample("acme", "resp_1")
	mustPut(t, s, cp, items)
	ids := []string{items[2].ID, items[0].ID, items[2].ID}
	got, err := s.GetItems(t.Context(), "acme", ids)
	if err != nil {
		t.Fatalf("GetItems(%q) = %v", ids, err)
	}
	want := []store.Item{items[2], items[0], items[2]}
	if diff := cmpDiff(want, got); diff != "" {
		t.Errorf("GetItems order mismatch (-want +got):\n%s", diff)
	}
	_, err = s.GetItems(t.Context(), "acme", []string{items[0].ID, "msg_missing"})
	wantNotFound(t, "GetItems(with a missing id)", err)
}

func testOverwrite(t *testing.T, s Checkpoints) {
	cp, items := Sample("acme", "resp_1")
	mustPut(t, s, cp, items)
	// Re-putting a response (a retry, a replay) with the same items replaces
	// the record and keeps the items.
	cp.Status = "incomplete"
	mustPut(t, s, cp, items)
	got, err := s.GetResponse(t.Context(), "acme", "resp_1")
	if err != nil || got.Status != "incomplete" {
		t.Fatalf("GetResponse after overwrite = %+v, %v; want status incomplete", got, err)
	}
	if diff := cmpDiff(cp.ConversationItemIDs, got.ConversationItemIDs); diff != "" {
		t.Errorf("identical items were renamed (-put +got):\n%s", diff)
	}
	gotItems, err := s.GetItems(t.Context(), "acme", got.ConversationItemIDs)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmpDiff(items, gotItems); diff != "" {
		t.Errorf("items after overwrite (-put +got):\n%s", diff)
	}
}

// testImmutableItems: a response reusing another response's item ids with
// other bytes leaves the first response's history exactly as it was, and
// reads its own.
func testImmutableItems(t *testing.T, s Checkpoints) {
	cp1, items1 := Sample("acme", "resp_1")
	mustPut(t, s, cp1, items1)
	cp2, _ := Sample("acme", "resp_2")
	cp2.PreviousID = ""
	rewritten := store.Item{ID: items1[0].ID, Data: json.RawMessage(`{"type":"message","role":"user","content":"rewritten"}`)}
	fresh := store.Item{ID: "msg_out_2", Data: json.RawMessage(`{"type":"message","role":"assistant","content":"ok"}`)}
	cp2.InputItemIDs = []string{rewritten.ID}
	cp2.OutputItemIDs = []string{fresh.ID}
	cp2.ConversationItemIDs = []string{rewritten.ID, fresh.ID}
	mustPut(t, s, cp2, []store.Item{rewritten, fresh})

	got1, err := s.GetResponse(t.Context(), "acme", "resp_1")
	if err != nil {
		t.Fatal(err)
	}
	hist1, err := s.GetItems(t.Context(), "acme", got1.ConversationItemIDs)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmpDiff(items1, hist1); diff != "" {
		t.Errorf("resp_1's history was rewritten by resp_2 (-want +got):\n%s", diff)
	}
	got2, err := s.GetResponse(t.Context(), "acme", "resp_2")
	if err != nil {
		t.Fatal(err)
	}
	hist2, err := s.GetItems(t.Context(), "acme", got2.ConversationItemIDs)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist2) != 2 || string(hist2[0].Data) != string(rewritten.Data) || string(hist2[1].Data) != string(fresh.Data) {
		t.Errorf("resp_2's history = %v, want its own items", hist2)
	}
	if got2.InputItemIDs[0] == rewritten.ID || got2.ConversationItemIDs[0] != got2.InputItemIDs[0] {
		t.Errorf("resp_2 ids = %q / %q; want its input item under a derived id in both", got2.InputItemIDs, got2.ConversationItemIDs)
	}
	if got2.OutputItemIDs[0] != fresh.ID {
		t.Errorf("an item with a fresh id was renamed: %q", got2.OutputItemIDs)
	}
	// The same rewrite again is stable (content-addressed), and a third
	// response continuing resp_2 reads resp_2's history.
	cp3, _ := Sample("acme", "resp_3")
	cp3.InputItemIDs = []string{"msg_in_3"}
	cp3.OutputItemIDs = nil
	cp3.ConversationItemIDs = append(slices.Clone(got2.ConversationItemIDs), "msg_in_3")
	mustPut(t, s, cp3, []store.Item{{ID: "msg_in_3", Data: json.RawMessage(`{"n":3}`)}})
	got3, err := s.GetResponse(t.Context(), "acme", "resp_3")
	if err != nil {
		t.Fatal(err)
	}
	hist3, err := s.GetItems(t.Context(), "acme", got3.ConversationItemIDs)
	if err != nil || string(hist3[0].Data) != string(rewritten.Data) {
		t.Errorf("resp_3's history = %v, %v; want resp_2's rewritten item first", hist3, err)
	}
}

// testHistory: PutResponseHistory stores a continuation whose earlier items
// are passed along; the whole conversation reads back.
func testHistory(t *testing.T, s Checkpoints) {
	cp1, items1 := Sample("acme", "resp_1")
	mustPut(t, s, cp1, items1)
	cp2, items2 := Sample("acme", "resp_2")
	cp2.PreviousID = "resp_1"
	cp2.ConversationItemIDs = append(slices.Clone(cp1.ConversationItemIDs), cp2.ConversationItemIDs...)
	if err := s.PutResponseHistory(t.Context(), cp2, items2, items1); err != nil {
		t.Fatalf("PutResponseHistory = %v", err)
	}
	got, err := s.GetResponse(t.Context(), "acme", "resp_2")
	if err != nil {
		t.Fatal(err)
	}
	all, err := s.GetItems(t.Context(), "acme", got.ConversationItemIDs)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmpDiff(append(slices.Clone(items1), items2...), all); diff != "" {
		t.Errorf("conversation after PutResponseHistory (-want +got):\n%s", diff)
	}
}

// testTombstone: a deleted id stays deleted; a put cannot bring it back.
func testTombstone(t *testing.T, s Checkpoints) {
	cp, items := Sample("acme", "resp_1")
	mustPut(t, s, cp, items)
	if err := s.DeleteResponse(t.Context(), "acme", "resp_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetResponse(t.Context(), "acme", "resp_1"); !errors.Is(err, store.ErrDeleted) {
		t.Errorf("GetResponse(deleted) = %v, want ErrDeleted", err)
	}
	if err := s.PutResponse(t.Context(), cp, items); !errors.Is(err, store.ErrDeleted) {
		t.Errorf("PutResponse(deleted id) = %v, want ErrDeleted", err)
	}
	if _, err := s.GetResponse(t.Context(), "acme", "resp_1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetResponse after re-put of a deleted id = %v, want not found", err)
	}
	// Another tenant's same id is unaffected.
	cp2, items2 := Sample("other", "resp_1")
	mustPut(t, s, cp2, items2)
}

func testDelete(t *testing.T, s Checkpoints) {
	cp1, items1 := Sample("acme", "resp_1")
	mustPut(t, s, cp1, items1)
	cp2, items2 := Sample("acme", "resp_2")
	cp2.ConversationItemIDs = append(append([]string{}, cp1.ConversationItemIDs...), cp2.ConversationItemIDs...)
	mustPut(t, s, cp2, items2)
	if err := s.DeleteResponse(t.Context(), "acme", "resp_1"); err != nil {
		t.Fatalf("DeleteResponse = %v", err)
	}
	_, err := s.GetResponse(t.Context(), "acme", "resp_1")
	wantNotFound(t, "GetResponse(deleted)", err)
	wantNotFound(t, "DeleteResponse(deleted)", s.DeleteResponse(t.Context(), "acme", "resp_1"))
	// The later response still continues: its conversation's items remain.
	if _, err := s.GetItems(t.Context(), "acme", cp2.ConversationItemIDs); err != nil {
		t.Errorf("GetItems(later conversation) after deleting resp_1 = %v", err)
	}
}

func testInvalidKeys(t *testing.T, s Checkpoints) {
	tests := []struct{ tenant, id string }{
		{"", "resp_1"},
		{"acme", ""},
		{"a{b", "resp_1"},
		{"a}b", "resp_1"},
		{"a\x00b", "resp_1"},
		{"acme", "resp\x00x"},
		{string(make([]byte, store.MaxTenantLen+1)), "resp_1"},
	}
	for _, tt := range tests {
		cp, items := Sample(tt.tenant, tt.id)
		if err := s.PutResponse(t.Context(), cp, items); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("PutResponse(%q, %q) = %v, want ErrInvalidKey", tt.tenant, tt.id, err)
		}
		_, err := s.GetResponse(t.Context(), tt.tenant, tt.id)
		wantNotFound(t, fmt.Sprintf("GetResponse(%q, %q)", tt.tenant, tt.id), err)
	}
	cp, items := Sample("acme", "resp_1")
	items[1].ID = ""
	if err := s.PutResponse(t.Context(), cp, items); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("PutResponse(empty item id) = %v, want ErrInvalidKey", err)
	}
	if _, err := s.GetResponse(t.Context(), "acme", "resp_1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a rejected PutResponse stored something: GetResponse = %v", err)
	}
}

func testOwnership(t *testing.T, s Checkpoints) {
	cp, items := Sample("acme", "resp_1")
	want, wantItems := Sample("acme", "resp_1")
	mustPut(t, s, cp, items)
	// Mutating what was put must not change the store.
	cp.ConversationItemIDs[0] = "mutated"
	cp.GeneratedIDs[0] = 99
	cp.Response[2] = 'X'
	items[0].Data[2] = 'X'
	got, err := s.GetResponse(t.Context(), "acme", "resp_1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmpDiff(want, got); diff != "" {
		t.Errorf("store aliased the caller's checkpoint (-want +got):\n%s", diff)
	}
	// Mutating what was read must not change the store either.
	got.ConversationItemIDs[0] = "mutated"
	got.GeneratedIDs[0] = 99
	gotItems, err := s.GetItems(t.Context(), "acme", got.InputItemIDs)
	if err != nil {
		t.Fatal(err)
	}
	gotItems[0].Data[2] = 'X'
	again, err := s.GetResponse(t.Context(), "acme", "resp_1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmpDiff(want, again); diff != "" {
		t.Errorf("store aliased a returned checkpoint (-want +got):\n%s", diff)
	}
	againItems, err := s.GetItems(t.Context(), "acme", want.InputItemIDs)
	if err != nil || string(againItems[0].Data) != string(wantItems[0].Data) {
		t.Errorf("store aliased a returned item: %v, %v", againItems, err)
	}
}

func testCancelled(t *testing.T, s Checkpoints) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	cp, items := Sample("acme", "resp_1")
	if err := s.PutResponse(ctx, cp, items); !errors.Is(err, context.Canceled) {
		t.Errorf("PutResponse(cancelled ctx) = %v, want context.Canceled", err)
	}
	if _, err := s.GetResponse(ctx, "acme", "resp_1"); !errors.Is(err, context.Canceled) {
		t.Errorf("GetResponse(cancelled ctx) = %v, want context.Canceled", err)
	}
}

func testLarge(t *testing.T, s Checkpoints) {
	const nItems, nIDs = 2000, 100_000
	cp := &store.Checkpoint{ID: "resp_big", Tenant: "acme", CreatedAt: time.Unix(1, 0).UTC()}
	items := make([]store.Item, nItems)
	for i := range items {
		items[i] = store.Item{ID: fmt.Sprintf("msg_%05d", i), Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
		cp.ConversationItemIDs = append(cp.ConversationItemIDs, items[i].ID)
	}
	cp.GeneratedIDs = make([]uint32, nIDs)
	for i := range cp.GeneratedIDs {
		cp.GeneratedIDs[i] = uint32(i * 7919 % 151_936)
	}
	mustPut(t, s, cp, items)
	got, err := s.GetResponse(t.Context(), "acme", "resp_big")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmpDiff(cp, got); diff != "" {
		t.Errorf("large checkpoint mismatch (-put +got):\n%.2000s", diff)
	}
	gotItems, err := s.GetItems(t.Context(), "acme", got.ConversationItemIDs)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmpDiff(items, gotItems); diff != "" {
		t.Errorf("large items mismatch (-put +got):\n%.2000s", diff)
	}
}

func testConcurrent(t *testing.T, s Checkpoints) {
	const workers, perWorker = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*perWorker)
	for w := range workers {
		wg.Go(func() {
			tenant := fmt.Sprintf("tenant%d", w%3)
			for i := range perWorker {
				id := fmt.Sprintf("resp_%d_%d", w, i)
				cp, items := Sample(tenant, id)
				if err := s.PutResponse(t.Context(), cp, items); err != nil {
					errs <- err
					return
				}
				got, err := s.GetResponse(t.Context(), tenant, id)
				if err != nil {
					errs <- err
					return
				}
				if got.ID != id || got.Tenant != tenant {
					errs <- fmt.Errorf("GetResponse(%q, %q) returned %q/%q", tenant, id, got.Tenant, got.ID)
					return
				}
				if _, err := s.GetItems(t.Context(), tenant, got.ConversationItemIDs); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
