package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/tidwall/gjson"
)

// responsesSeeds are Responses inputs (items array, tools, instructions): those of
// responses_test.go, items where gjson's reading is easy to miss, and the agent conversation.
var responsesSeeds = []struct{ input, tools, instructions string }{
	{`[{"role":"user","content":"hi"}]`, ``, `Be brief.`},
	{`[{"type":"message","role":"developer","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]},{"role":"user","content":[{"type":"input_text","text":"q"}]}]`, ``, ``},
	{`[{"role":"user","content":"q"},
		{"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"reasoning_text","text":"think"}]},
		{"type":"message","role":"assistant","id":"msg_1","status":"completed","content":[{"type":"output_text","text":"Let me check.","annotations":[]}]},
		{"type":"function_call","call_id":"c1","name":"f","arguments":"{\"a\":1.0}"},
		{"type":"function_call","call_id":"c2","name":"g","arguments":""},
		{"type":"function_call_output","call_id":"c1","output":"r1"},
		{"type":"function_call_output","call_id":"c2","output":[{"type":"input_text","text":"r2"}]}]`, ``, ``},
	{`[{"role":"user","content":"q"},
		{"type":"reasoning","id":"rs_1","content":null,"encrypted_content":"opaque","summary":[{"type":"summary_text","text":"sum"}]},
		{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},
		{"type":"reasoning","id":"rs_2","content":null,"encrypted_content":"opaque","summary":[]},
		{"type":"function_call","call_id":"c2","name":"f","arguments":"{}"}]`, ``, ``},
	{`[{"type":"reasoning","content":[{"type":"reasoning_text","text":"lost"}]},
		{"role":"user","content":"q"},
		{"role":"assistant","content":[{"type":"refusal","refusal":"no"}]}]`, ``, ``},
	{`[{"role":"user","content":"q"}]`, `[{"type":"function","name":"f","description":"d","parameters":{"type":"object","properties":{"x":{"type":"number","default":0.0}}},"strict":true},
		{"type":"web_search"},
		{"type":"namespace","name":"mcp__fs","description":"fs","tools":[{"type":"function","name":"read","parameters":{"type":"object"}},{"type":"custom","name":"x"}]},
		{"type":"function","name":"bare"}]`, ``},
	{`[{"role":"user","content":"a"},{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"x"}]}]`, ``, ``},
	{`[{"role":"user","content":[{"type":"bogus"}]}]`, ``, ``},
	{`[{"type":"wat"}]`, ``, ``},
	{`[{"role":"tool","content":"x"}]`, ``, ``},
	{`[{"type":"item_reference","id":"msg_1"}]`, ``, ``},
	{`[{"type":"function_call","call_id":"c"}]`, ``, ``},
	{`[{"type":"function_call_output","call_id":"c","output":{}}]`, ``, ``},
	{`[[1]]`, ``, ``},
	{`[{"role":"user","content":[{"type":"input_text","text":5}]}]`, ``, ``},
	{`[]`, `[{"type":"function"}]`, ``},
	{`[]`, `{}`, ``},
	{`[]`, `[{"type":"namespace","tools":[{"type":"function","name":1}]}]`, ``},
	// The seeds of FuzzResponsesToMessages.
	{`[{"type":"reasoning","content":null,"summary":[{"type":"summary_text","text":"s"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}]`, ``, ``},
	{`[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"x"}]},{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"o"}]}]`, ``, ``},
	{`[{"role":"user","content":[{"type":"input_image"}]}]`, ``, ``},
	{`[1, "x", null, {"type": 5}]`, ``, ``},
	// Escaped and duplicate keys, escapes, odd values.
	{`[{"t\u0079pe":"message","type":"function_call","r\u006fle":"user","role":"system","content":"x\ud83d\ude00\ud800\n"}]`, ``, ``},
	{`[{"content":[{"text":"late type","type":"output_text"},{"type":"refusal","text":"t","refusal":"r"}],"role":"assistant"}]`, ``, ``},
	{`[{"type":"function_call","call_id":"c","name":"f","arguments":null},{"type":"function_call","call_id":"c","name":"f","arguments":"\u0041\"x"}]`, ``, ``},
	{`[{"type":"function_call","call_id":"c","name":"f","arguments":{"a":1}}]`, ``, ``},
	{`[{"type":"reasoning","content":[],"summary":[{"type":"summary_text","text":"a"},{"text":"b"}]},{"role":"assistant","content":null}]`, ``, ``},
	{`[{"type":"reasoning","content":[{"type":5,"text":"x"}]}]`, ``, ``},
	{`[{"type":"reasoning","content":[{"type":1.50,"text":"x"}]}]`, ``, ``},
	{`[{"type":"reasoning","summary":{"type":"summary_text"}}]`, ``, ``},
	{`[{"type":"function_call_output","call_id":"c","output":[{"type":"output_text","text":"a"},{"type":"refusal","refusal":"b"}]}]`, ``, ``},
	{`[{"type":"function_call_output","call_id":"c","output":[{"type":"input_file"}]}]`, ``, ``},
	{"[ {\"role\" :\t\"user\" ,\n \"content\" : \"spaced\" } ]", ``, ``},
	{`[{"type":"compaction"}]`, ``, ``},
	{`[{"role":"user","content":"q"}]`, `null`, ``},
	{`[{"role":"user","content":"q"}]`, `[{"type":"function","name":"f"},{"type":"namespace","tools":[]}]`, `instr`},
}

// responsesCorpus is every input FromResponses is compared on: responsesSeeds, the golden
// Responses cases and agentItems.
func responsesCorpus(tb testing.TB) []ResponsesInput {
	tb.Helper()
	var out []ResponsesInput
	for _, s := range responsesSeeds {
		in := ResponsesInput{Instructions: s.instructions, Items: fuzzItems([]byte(s.input))}
		if s.tools != "" {
			in.Tools = json.RawMessage(s.tools)
		}
		out = append(out, in)
	}
	for _, l := range readJSONL(tb, filepath.Join(goldenDir, "responses_cases.jsonl")) {
		line := gjson.ParseBytes(l)
		in := ResponsesInput{Instructions: line.Get("instructions").Str, Items: fuzzItems([]byte(line.Get("input").Raw))}
		if tools := line.Get("tools"); tools.Exists() {
			in.Tools = json.RawMessage(tools.Raw)
		}
		out = append(out, in)
	}
	return append(out, ResponsesInput{Instructions: "Be brief.", Items: agentItems(tb, 4)})
}

// fuzzItems splits a JSON array into items as FuzzResponsesToMessages does; anything else is one
// item.
func fuzzItems(input []byte) []json.RawMessage {
	var raw []json.RawMessage
	if json.Unmarshal(input, &raw) != nil {
		raw = []json.RawMessage{input}
	}
	return raw
}

// collidingCache is a cache whose every item has the same hash: hits are found only by comparing
// the bytes.
func collidingCache() *ItemCache {
	c := NewItemCache(1 << 20)
	c.hash = func(maphash.Seed, []byte) uint64 { return 7 }
	return c
}

// checkSameResult compares FromResponses's result on in with the reference implementation's:
// deep-equal conversations, or errors with the same param, message and sentinel.
func checkSameResult(t *testing.T, what string, in ResponsesInput, want *Conversation, wantErr error) {
	t.Helper()
	got, err := FromResponses(in)
	if wantErr != nil {
		var ie, wantIE *InputError
		if !errors.As(err, &ie) || !errors.As(wantErr, &wantIE) {
			t.Fatalf("%s: error %v, want %v", what, err, wantErr)
		}
		if *ie != *wantIE {
			t.Fatalf("%s: error %#v, want %#v", what, *ie, *wantIE)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: %v, want success", what, err)
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(Conversation{})); diff != "" {
		t.Fatalf("%s: conversation differs from the reference (-want +got):\n%s", what, diff)
	}
	if d := got.ToolsDigest(); d != ToolsDigest(want.Tools) {
		t.Fatalf("%s: tools digest %s, want %s", what, d, ToolsDigest(want.Tools))
	}
}

// checkAllWays runs in through the reference implementation, then FromResponses without a cache,
// twice through one cache (a miss, then hits), twice through a cache where every item collides,
// and through a cache too small for much; all must agree.
func checkAllWays(t *testing.T, in ResponsesInput) {
	t.Helper()
	want, wantErr := refFromResponses(in)
	checkSameResult(t, "no cache", in, want, wantErr)
	for _, c := range []struct {
		name  string
		cache *ItemCache
		// names, when set, names the items as stored items (ResponsesInput.StoredIDs): item i
		// as item_{i mod names}. Names that repeat give one name other bytes, which the store
		// never does but for an item it let expire: the sampled hash tells them apart (not in
		// the colliding cache, whose names are unique).
		names int
	}{{"cache", NewItemCache(1 << 20), 0}, {"colliding cache", collidingCache(), 0}, {"small cache", NewItemCache(700), 0},
		{"cache, stored names", NewItemCache(1 << 20), 3}, {"colliding cache, stored names", collidingCache(), 1 << 30}} {
		in.Cache, in.Tenant, in.StoredIDs = c.cache, "", nil
		if c.names > 0 {
			in.Tenant = "t"
			for i := range in.Items {
				in.StoredIDs = append(in.StoredIDs, fmt.Sprint("item_", i%c.names))
			}
		}
		checkSameResult(t, c.name+" (cold)", in, want, wantErr)
		checkSameResult(t, c.name+" (warm)", in, want, wantErr)
		checkCacheInvariants(t, c.cache)
	}
}

func TestFromResponsesCacheMatchesReference(t *testing.T) {
	t.Parallel()
	for i, in := range responsesCorpus(t) {
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkAllWays(t, in) })
	}
}

// FuzzResponsesMatchReference: on any input, FromResponses with or without a cache gives what
// FromResponses gave before items were parsed by parseItem (responses_ref_test.go).
func FuzzResponsesMatchReference(f *testing.F) {
	for _, s := range responsesSeeds {
		f.Add([]byte(s.input), []byte(s.tools), s.instructions)
	}
	f.Fuzz(func(t *testing.T, input, tools []byte, instructions string) {
		checkAllWays(t, ResponsesInput{Instructions: instructions, Items: fuzzItems(input), Tools: tools})
	})
}

// checkCacheInvariants checks the cache's accounting against its entries.
func checkCacheInvariants(t *testing.T, c *ItemCache) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	sum, names := 0, 0
	for h, e := range c.entries {
		size := len(e.raw) + len(e.tenant) + e.item.stringBytes() + entryOverhead
		for _, n := range e.stored {
			if c.stored[n] != e {
				t.Fatalf("entry %x lists stored item %v, which names another entry", h, n)
			}
			size += len(n.Tenant) + len(n.ID) + storedOverhead
		}
		if e.hash != h || e.size != size || len(e.stored) > maxStoredPerEntry {
			t.Fatalf("entry %x: hash %x, size %d for %d raw bytes and %d names", h, e.hash, e.size, len(e.raw), len(e.stored))
		}
		sum += e.size
		names += len(e.stored)
	}
	if names != len(c.stored) {
		t.Fatalf("entries list %d stored names, the index holds %d", names, len(c.stored))
	}
	if sum != c.bytes || c.bytes > c.maxBytes {
		t.Fatalf("cache accounts %d bytes (max %d), entries hold %d", c.bytes, c.maxBytes, sum)
	}
	if live := len(c.queue) - c.head; live != len(c.entries) {
		t.Fatalf("queue holds %d entries, map %d", live, len(c.entries))
	}
}

// TestItemCacheBound replays an agent conversation turn by turn through a cache that holds only
// a few of its items: it stays within its bound while holding some.
func TestItemCacheBound(t *testing.T) {
	t.Parallel()
	items := agentItems(t, 12)
	const max = 30_000 // about three tool outputs with their parsed text
	c := NewItemCache(max)
	for n := 1; n <= len(items); n++ {
		in := ResponsesInput{Items: items[:n], Cache: c}
		want, err := FromResponses(ResponsesInput{Items: items[:n]})
		if err != nil {
			t.Fatal(err)
		}
		checkSameResult(t, fmt.Sprintf("turn %d", n), in, want, nil)
		if c.Bytes() > max || c.Len() < 1 {
			t.Fatalf("turn %d: cache holds %d items, %d bytes (max %d)", n, c.Len(), c.Bytes(), max)
		}
		checkCacheInvariants(t, c)
	}
	if c.Len() >= len(items) {
		t.Fatalf("cache holds all %d items: the bound was not exercised", c.Len())
	}
}

func TestItemCacheTooLarge(t *testing.T) {
	t.Parallel()
	c := NewItemCache(100)
	if _, err := FromResponses(ResponsesInput{Items: items(t, `[{"role":"user","content":"hi"}]`), Cache: c}); err != nil {
		t.Fatal(err)
	}
	if c.Len() != 0 || c.Bytes() != 0 {
		t.Fatalf("an item over the bound was cached: %d items, %d bytes", c.Len(), c.Bytes())
	}
}

// TestItemCacheCollision: items with the same hash never stand in for each other.
func TestItemCacheCollision(t *testing.T) {
	t.Parallel()
	c := collidingCache()
	a, b := json.RawMessage(`{"role":"user","content":"a"}`), json.RawMessage(`{"role":"user","content":"b"}`)
	for _, seq := range [][]json.RawMessage{{a}, {b}, {a, b}, {b, a, a}} {
		conv, err := FromResponses(ResponsesInput{Items: seq, Cache: c})
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range conv.Messages {
			if want := gjson.GetBytes(seq[i], "content").Str; m.Content != want {
				t.Fatalf("item %s read as %q", seq[i], m.Content)
			}
		}
	}
	if _, _, ok := c.get(b); ok {
		t.Fatal("b hit the entry of a")
	}
	if c.Len() != 1 {
		t.Fatalf("colliding cache holds %d entries, want the first item only", c.Len())
	}
}

// longItem is a user message of 4,000 characters that differs from another longItem only in
// the character mid, outside sampledHash's samples.
func longItem(mid byte) json.RawMessage {
	content := strings.Repeat("x", 1000) + string(mid) + strings.Repeat("y", 3000)
	return json.RawMessage(`{"role":"user","content":"` + content + `"}`)
}

// TestItemCacheSampledHash: long items that differ only between the hashed samples share a slot
// but never each other's parse.
func TestItemCacheSampledHash(t *testing.T) {
	t.Parallel()
	c := NewItemCache(1 << 20)
	a, b := longItem('a'), longItem('b')
	if sampledHash(c.seed, a) != sampledHash(c.seed, b) {
		t.Fatal("the items should differ only outside the samples")
	}
	for _, seq := range [][]json.RawMessage{{a}, {b}, {a, b}, {b, a, a}} {
		conv, err := FromResponses(ResponsesInput{Items: seq, Cache: c})
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range conv.Messages {
			if want := gjson.GetBytes(seq[i], "content").Str; m.Content != want {
				t.Fatalf("item %d read as another item's content", i)
			}
		}
	}
}

// TestItemCacheStoredNames: an item read under a stored name is compared with its entry once;
// afterwards the name finds it by length and sampled hash. A name never reaches another
// tenant's entry, and a name whose bytes changed (an item the store let expire and then took
// other bytes for) moves to the new bytes' entry.
func TestItemCacheStoredNames(t *testing.T) {
	t.Parallel()
	c := NewItemCache(1 << 20)
	readAs := func(tenant, id string, raw json.RawMessage) string {
		t.Helper()
		conv, err := FromResponses(ResponsesInput{Items: []json.RawMessage{raw}, Cache: c, Tenant: tenant, StoredIDs: []string{id}})
		if err != nil {
			t.Fatal(err)
		}
		checkCacheInvariants(t, c)
		return conv.Messages[0].Content
	}
	a, b := longItem('a'), longItem('b') // same length and samples (TestItemCacheSampledHash)
	wantA, wantB := gjson.GetBytes(a, "content").Str, gjson.GetBytes(b, "content").Str
	for read := range 2 { // a miss, then a hit by name
		if got := readAs("A", "msg_1", a); got != wantA {
			t.Fatalf("tenant A's item read wrong (read %d)", read)
		}
	}
	c.mu.Lock()
	named := c.stored[StoredItem{"A", "msg_1"}]
	c.mu.Unlock()
	if named == nil || named.raw != string(a) {
		t.Fatal("the stored name was not recorded for the verified entry")
	}
	// Tenant B's item under the same id, with bytes only a full comparison tells apart.
	if got := readAs("B", "msg_1", b); got != wantB {
		t.Fatalf("tenant B's item read as tenant A's (%d bytes)", len(got))
	}
	if got := readAs("B", "msg_1", b); got != wantB {
		t.Fatal("tenant B's item read wrong on its second read")
	}
	// A's name with other bytes (other length): the new bytes are parsed and the name moves.
	moved := json.RawMessage(`{"role":"user","content":"other"}`)
	for read := range 2 {
		if readAs("A", "msg_1", moved) != "other" {
			t.Fatalf("a stored name read its earlier bytes' parse (read %d)", read)
		}
	}
	c.mu.Lock()
	named = c.stored[StoredItem{"A", "msg_1"}]
	c.mu.Unlock()
	if named == nil || named.raw != string(moved) {
		t.Fatal("the stored name did not move to the new bytes' entry")
	}
	if readAs("A", "msg_1", a) != wantA {
		t.Fatal("tenant A's first item read wrong after its name moved")
	}
}

// TestItemCacheTenantScoped: an entry is found only by requests of the tenant that made it, for
// items by their bytes, stored items by name, and tools arrays: another tenant's identical
// request parses again (its strings are its own), so it cannot time what the first one sent.
func TestItemCacheTenantScoped(t *testing.T) {
	t.Parallel()
	c := NewItemCache(1 << 20)
	items := agentItems(t, 2)
	tools := json.RawMessage(`[{"type":"function","name":"f","parameters":{"type":"object"}}]`)
	read := func(tenant string, ids []string) *Conversation {
		t.Helper()
		conv, err := FromResponses(ResponsesInput{Items: items, Tools: tools, Cache: c, Tenant: tenant, StoredIDs: ids})
		if err != nil {
			t.Fatal(err)
		}
		checkCacheInvariants(t, c)
		return conv
	}
	ids := make([]string, len(items))
	for i := range ids {
		ids[i] = fmt.Sprintf("msg_%d", i)
	}
	for _, stored := range []bool{false, true} {
		var names []string
		if stored {
			names = ids
		}
		a := read("A", names)
		again := read("A", names)
		b := read("B", names)
		if diff := cmp.Diff(a.Messages, b.Messages); diff != "" {
			t.Fatalf("stored=%v: tenants' conversations differ (-A +B):\n%s", stored, diff)
		}
		for i, m := range a.Messages {
			if m.Content == "" {
				continue
			}
			if unsafe.StringData(again.Messages[i].Content) != unsafe.StringData(m.Content) {
				t.Errorf("stored=%v: message %d: tenant A's second read missed its own entry", stored, i)
			}
			if unsafe.StringData(b.Messages[i].Content) == unsafe.StringData(m.Content) {
				t.Errorf("stored=%v: message %d: tenant B's read hit tenant A's entry", stored, i)
			}
		}
		if len(a.Tools) == 0 || &again.Tools[0] != &a.Tools[0] {
			t.Errorf("stored=%v: tenant A's tools were parsed again", stored)
		}
		if len(b.Tools) == 0 || &b.Tools[0] == &a.Tools[0] {
			t.Errorf("stored=%v: tenant B's tools came from tenant A's entry", stored)
		}
	}
}

// TestItemCacheSharesStrings: a hit hands out the cached strings themselves, so callers can
// compare them by pointer; pointers and arguments' capacity keep the sharing safe.
func TestItemCacheSharesStrings(t *testing.T) {
	t.Parallel()
	c := NewItemCache(1 << 20)
	in := ResponsesInput{Items: agentItems(t, 2), Cache: c}
	first, err := FromResponses(in)
	if err != nil {
		t.Fatal(err)
	}
	second, err := FromResponses(in)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range second.Messages {
		f := first.Messages[i]
		if unsafe.StringData(m.Content) != unsafe.StringData(f.Content) {
			t.Errorf("message %d: content not shared on a hit", i)
		}
		if m.ToolCallID != nil && m.ToolCallID == f.ToolCallID {
			t.Errorf("message %d: tool_call_id pointer shared between conversations", i)
		}
		for j, tc := range m.ToolCalls {
			if &tc.Arguments[0] != &f.ToolCalls[j].Arguments[0] || cap(tc.Arguments) != len(tc.Arguments) {
				t.Errorf("message %d call %d: arguments not shared, or appendable in place", i, j)
			}
		}
	}
}

// TestItemCacheConcurrent replays overlapping conversations from several goroutines through one
// cache small enough to evict while others hit (run with -race).
func TestItemCacheConcurrent(t *testing.T) {
	t.Parallel()
	items := agentItems(t, 6)
	want := make([]*Conversation, len(items)+1)
	for n := range want {
		var err error
		if want[n], err = FromResponses(ResponsesInput{Items: items[:n]}); err != nil {
			t.Fatal(err)
		}
	}
	c := NewItemCache(40_000)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for r := range 3 {
				for n := (g + r) % 3; n <= len(items); n += 2 {
					got, err := FromResponses(ResponsesInput{Items: items[:n], Cache: c})
					if err != nil {
						t.Error(err)
						return
					}
					if diff := cmp.Diff(want[n], got, cmpopts.IgnoreUnexported(Conversation{})); diff != "" {
						t.Errorf("goroutine %d, %d items (-want +got):\n%s", g, n, diff)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	checkCacheInvariants(t, c)
}
