package harmony

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stitchllm/stitch/render"
)

// cacheBodies are request bodies the cache is checked on: the golden cases, error cases, and
// conversations whose items recur in another order or without the call an output names.
func cacheBodies(t testing.TB) []string {
	var cases []goldenCase
	readJSON(t, "cases.json", &cases)
	var out []string
	for _, c := range cases {
		out = append(out, c.Request)
	}
	call := `{"type":"function_call","name":"f","arguments":"{\"a\":1}","call_id":"c"}`
	call2 := `{"type":"function_call","name":"g","arguments":"{}","call_id":"c"}`
	output := `{"type":"function_call_output","call_id":"c","output":"o\nk \"q\""}`
	return append(out,
		`{"input":[{"role":"user","content":"q"},`+call+`,`+output+`]}`,
		`{"input":[{"role":"user","content":"q"},`+call2+`,`+output+`]}`, // the same output, another call's name
		`{"input":[{"role":"user","content":"q"},`+output+`]}`,           // the output without its call
		`{"input":[`+output+`,`+call+`]}`,
		`{"input":[{"role":"system","content":"s"},{"role":"developer","content":"d"},{"role":"user","content":"q"}]}`,
		`{"input":[{"role":"developer","content":""},{"type":"reasoning","content":[{"type":"reasoning_text","text":"r"}]},{"role":"assistant","content":[{"type":"output_text","text":"A"}]}]}`,
		`{"input":[{"role":"robot","content":"x"}]}`,
		`{"input":[{"type":"reasoning","content":[]},{"role":"user","content":[{"type":"input_image","image_url":"u"}]}]}`,
	)
}

// checkCached maps body with and without a shared cache (the cache then warm for the next
// body) and requires the same conversation or the same error.
func checkCached(t *testing.T, c *ItemCache, body string, opts Options) {
	t.Helper()
	req, err := RequestFromBody([]byte(body))
	if err != nil {
		return
	}
	want, wantErr := FromResponses(req, opts)
	for pass := range 2 {
		req.Cache = c
		got, err := FromResponses(req, opts)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("pass %d, %s: error %v, want %v", pass, body, err, wantErr)
		}
		if err != nil {
			var ie, wie *render.InputError
			if errors.As(err, &ie) != errors.As(wantErr, &wie) || ie != nil && *ie != *wie {
				t.Fatalf("pass %d, %s: error %v, want %v", pass, body, err, wantErr)
			}
			continue
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("pass %d, %s: conversation differs (-want +got):\n%s", pass, body, d)
		}
	}
}

// TestItemCacheMatchesUncached: with a cache shared by every body, in both orders and both
// instruction settings, each maps as it does without one.
func TestItemCacheMatchesUncached(t *testing.T) {
	bodies := cacheBodies(t)
	for _, inSystem := range []bool{false, true} {
		opts := Options{StartDate: "2025-01-01", InstructionsInSystem: inSystem}
		c := NewItemCache(1 << 20)
		for _, b := range bodies {
			checkCached(t, c, b, opts)
		}
		for i := len(bodies) - 1; i >= 0; i-- {
			checkCached(t, c, bodies[i], opts)
		}
		if c.Len() == 0 {
			t.Fatal("nothing cached")
		}
	}
}

// TestItemCacheBound: the cache holds at most its bound, evicting the oldest items.
func TestItemCacheBound(t *testing.T) {
	c := NewItemCache(4 * (cachedOverhead + 200))
	opts := Options{StartDate: "2025-01-01"}
	for i := range 50 {
		checkCached(t, c, fmt.Sprintf(`{"input":[{"role":"user","content":%q}]}`, strings.Repeat("x", i)), opts)
		c.mu.Lock()
		if n := len(c.m[""]); c.bytes > c.maxBytes || n != len(c.order)-c.head {
			t.Fatalf("after %d items: %d bytes of %d, %d entries, %d queued", i+1, c.bytes, c.maxBytes, n, len(c.order)-c.head)
		}
		c.mu.Unlock()
	}
}

// TestItemCacheTenantScoped: an item one tenant's request cached is found by that tenant's
// requests only; another tenant's identical request maps its items again, to the same messages.
func TestItemCacheTenantScoped(t *testing.T) {
	c := NewItemCache(1 << 20)
	opts := Options{StartDate: "2025-01-01"}
	req, err := RequestFromBody([]byte(`{"input":[{"role":"user","content":"q"},{"type":"function_call","name":"f","arguments":"{}","call_id":"c"},{"type":"function_call_output","call_id":"c","output":"o"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Cache = c
	var convs []*Conversation
	for _, tenant := range []string{"A", "B"} {
		req.Tenant = tenant
		conv, err := FromResponses(req, opts)
		if err != nil {
			t.Fatal(err)
		}
		convs = append(convs, conv)
		for _, raw := range req.Items {
			if c.get(tenant, "", raw) == nil {
				t.Fatalf("tenant %s: item %s not cached for it", tenant, raw)
			}
		}
	}
	if d := cmp.Diff(convs[0], convs[1]); d != "" {
		t.Fatalf("tenants' conversations differ (-A +B):\n%s", d)
	}
	for _, raw := range req.Items {
		if a, b := c.get("A", "", raw), c.get("B", "", raw); a == b {
			t.Fatalf("item %s: one entry serves both tenants", raw)
		}
	}
	if c.get("C", "", req.Items[0]) != nil {
		t.Fatal("a third tenant found another tenant's entry")
	}
}

// TestItemCacheStoredNames: a stored item is found by its id once its bytes matched, checking
// length and samples only; other bytes under the id (another length, or other samples) are
// mapped again and take the id over; ids are per tenant and go with their entry on eviction; the
// mapping is the uncached one throughout.
func TestItemCacheStoredNames(t *testing.T) {
	opts := Options{StartDate: "2025-01-01"}
	long := func(c byte) string { return `{"role":"user","content":"` + strings.Repeat(string(c), 2000) + `"}` }
	body := func(item string) string {
		return `{"input":[` + item + `]}`
	}
	c := NewItemCache(1 << 20)
	read := func(tenant, id, item string) *cachedItem {
		t.Helper()
		req, err := RequestFromBody([]byte(body(item)))
		if err != nil {
			t.Fatal(err)
		}
		want, err := FromResponses(req, opts)
		if err != nil {
			t.Fatal(err)
		}
		req.Cache, req.Tenant, req.StoredIDs = c, tenant, []string{id}
		got, err := FromResponses(req, opts)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("%s/%s: mapping differs from the uncached one (-want +got):\n%s", tenant, id, d)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		checkNames(t, c)
		return c.named[storedName{tenant, id}]
	}
	a := long('a')
	first := read("A", "msg_1", a)
	if first == nil || first.raw != a {
		t.Fatal("the stored id was not recorded for the entry its bytes matched")
	}
	if read("A", "msg_1", a) != first {
		t.Fatal("a second read under the id did not find the entry by it")
	}
	if read("B", "msg_1", a) == first {
		t.Fatal("tenant B's id reached tenant A's entry")
	}
	other := long('b') // same length, other samples
	if e := read("A", "msg_1", other); e == nil || e == first || e.raw != other {
		t.Fatal("other bytes under the id did not move it to their own entry")
	}
	if e := read("A", "msg_1", `{"role":"user","content":"short"}`); e == nil || e.raw == other {
		t.Fatal("bytes of another length under the id did not move it")
	}
	small := NewItemCache(3 * (2*len(a) + cachedOverhead + 400))
	c = small
	for i := range 10 {
		read("A", fmt.Sprintf("msg_%d", i), long(byte('a'+i)))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.named) > 3 || c.bytes > c.maxBytes {
		t.Fatalf("after eviction: %d ids named, %d bytes of %d", len(c.named), c.bytes, c.maxBytes)
	}
}

// checkNames checks, under c.mu, that every named entry is cached and lists its id, and that the
// accounting adds up.
func checkNames(t *testing.T, c *ItemCache) {
	t.Helper()
	for n, it := range c.named {
		if c.m[n.tenant][it.raw] != it || !slices.Contains(it.ids, n.id) {
			t.Fatalf("id %v names an entry that is not cached or does not list it", n)
		}
	}
	sum := 0
	for _, byTenant := range c.m {
		for _, it := range byTenant {
			sum += it.size
		}
	}
	if sum != c.bytes {
		t.Fatalf("entries hold %d bytes, the cache accounts %d", sum, c.bytes)
	}
}

func FuzzItemCache(f *testing.F) {
	for _, b := range cacheBodies(f) {
		f.Add(b)
	}
	c := NewItemCache(1 << 20)
	f.Fuzz(func(t *testing.T, body string) {
		if len(body) > 1<<16 {
			return
		}
		checkCached(t, c, body, Options{StartDate: "2025-01-01"})
	})
}
