package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stitchllm/stitch/store/redistest"
)

// countingRecords counts the keys each update writes or refreshes.
type countingRecords struct {
	RecordBackend
	writes []int
}

func (c *countingRecords) update(ctx context.Context, key string, fn func(cur []byte) (*recordWrites, error)) error {
	return c.RecordBackend.update(ctx, key, func(cur []byte) (*recordWrites, error) {
		w, err := fn(cur)
		if w != nil {
			c.writes = append(c.writes, len(w.puts)+len(w.touchPuts)+len(w.touch))
		}
		return w, err
	})
}

type fakeClock struct{ t time.Time }

func (f *fakeClock) now() time.Time { return f.t }

func convItems(prefix string, n int) []Item {
	items := make([]Item, n)
	for i := range items {
		items[i] = Item{ID: fmt.Sprintf("%s_%d", prefix, i), Data: []byte(`{"type":"message","role":"user","content":"x"}`)}
	}
	return items
}

// TestConversationAppendCostsNewItems: a turn appended to a long conversation writes its new
// items and the record, not a ttl refresh of every item; the refresh of all happens once per
// itemSlack (issue 31: appends took 2.8 ms at 1,000 items and 27.7 ms at 8,000).
func TestConversationAppendCostsNewItems(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	rb := &countingRecords{RecordBackend: MemoryRecords(clock.now)}
	ttl := 8 * time.Hour
	convs := NewConversations(rb, ConversationsOptions{TTL: ttl, Now: clock.now})
	if err := convs.Create(ctx, &Conversation{ID: "conv_a", Tenant: "t", CreatedAt: clock.t}, convItems("first", 20)); err != nil {
		t.Fatal(err)
	}
	for i := range 400 { // 8,020 items
		clock.t = clock.t.Add(time.Second)
		if _, err := convs.Append(ctx, "t", "conv_a", convItems(fmt.Sprintf("turn%d", i), 20), "", 0); err != nil {
			t.Fatal(err)
		}
	}
	for i, n := range rb.writes[1:] {
		if n != 21 { // 20 items + the record
			t.Fatalf("append %d wrote or refreshed %d keys, want 21", i, n)
		}
	}
	rb.writes = nil
	clock.t = clock.t.Add(ttl / 8)
	if _, err := convs.Append(ctx, "t", "conv_a", convItems("late", 1), "", 0); err != nil {
		t.Fatal(err)
	}
	if want := 8020 + 1 + 1; rb.writes[0] != want {
		t.Errorf("append after the slack wrote or refreshed %d keys, want every item refreshed (%d)", rb.writes[0], want)
	}
}

// TestConversationItemsOutliveRecord: whatever the rhythm of changes, no item expires while its
// conversation record lives (a conversation that names an expired item would fail every turn).
func TestConversationItemsOutliveRecord(t *testing.T) {
	ctx := context.Background()
	ttl := 8 * time.Hour
	for _, gap := range []time.Duration{time.Minute, ttl / 9, ttl / 8, ttl/8 + time.Second, ttl / 3, ttl - time.Second} {
		t.Run(gap.String(), func(t *testing.T) {
			clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
			convs := NewConversations(MemoryRecords(clock.now), ConversationsOptions{TTL: ttl, Now: clock.now})
			if err := convs.Create(ctx, &Conversation{ID: "conv_a", Tenant: "t", CreatedAt: clock.t}, convItems("first", 2)); err != nil {
				t.Fatal(err)
			}
			for i := range 40 {
				clock.t = clock.t.Add(gap)
				if _, err := convs.Append(ctx, "t", "conv_a", convItems(fmt.Sprintf("turn%d", i), 1), "", 0); err != nil {
					t.Fatalf("append %d: %v", i, err)
				}
				// Just before the record expires, every item it names must still be there.
				saved := clock.t
				clock.t = clock.t.Add(ttl - time.Millisecond)
				c, err := convs.Get(ctx, "t", "conv_a")
				if err != nil {
					t.Fatalf("turn %d: record gone before its ttl: %v", i, err)
				}
				if _, err := convs.Items(ctx, "t", "conv_a", c.ItemIDs); err != nil {
					t.Fatalf("turn %d: an item expired before its record: %v", i, err)
				}
				clock.t = saved
			}
		})
	}
}

// TestConversationMaxItems: a client's items past MaxItems are refused whole; a turn's are
// never refused (it was admitted before it generated).
func TestConversationMaxItems(t *testing.T) {
	ctx := context.Background()
	convs := NewConversations(MemoryRecords(nil), ConversationsOptions{MaxItems: 5})
	if err := convs.Create(ctx, &Conversation{ID: "conv_big", Tenant: "t"}, convItems("a", 6)); !errors.Is(err, ErrTooManyItems) {
		t.Fatalf("create with 6 of 5 = %v, want ErrTooManyItems", err)
	}
	if err := convs.Create(ctx, &Conversation{ID: "conv_a", Tenant: "t"}, convItems("a", 3)); err != nil {
		t.Fatal(err)
	}
	if _, err := convs.AddItems(ctx, "t", "conv_a", convItems("b", 3)); !errors.Is(err, ErrTooManyItems) {
		t.Fatalf("add 3 to 3 of 5 = %v, want ErrTooManyItems", err)
	}
	c, err := convs.AddItems(ctx, "t", "conv_a", convItems("b", 2))
	if err != nil || len(c.ItemIDs) != 5 {
		t.Fatalf("add 2 to 3 of 5 = %v, %v", c, err)
	}
	if c, err = convs.Append(ctx, "t", "conv_a", convItems("turn", 2), "resp_1", c.Version); err != nil || len(c.ItemIDs) != 7 {
		t.Fatalf("a turn's append past the bound = %v, %v; want it kept", c, err)
	}
}

// BenchmarkConversationAppend appends one turn (3 items) to conversations of 1,000 and 8,000
// items in real Redis: the cost should not grow with the conversation beyond its id list.
func BenchmarkConversationAppend(b *testing.B) {
	c := NewRedisClient(RedisOptions{Addrs: []string{redistest.Start(b)}})
	defer c.Close()
	ctx := context.Background()
	runs := 0
	for _, n := range []int{1000, 8000} {
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			runs++
			id := fmt.Sprintf("conv_%d", runs)
			convs := NewConversations(RedisRecords(c, "bench"), ConversationsOptions{})
			if err := convs.Create(ctx, &Conversation{ID: id, Tenant: "t"}, nil); err != nil {
				b.Fatal(err)
			}
			for i := 0; i < n; i += 20 {
				if _, err := convs.AddItems(ctx, "t", id, convItems(fmt.Sprintf("seed%d", i), 20)); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := range b.N {
				if _, err := convs.Append(ctx, "t", id, convItems(fmt.Sprintf("turn%d", i), 3), "", 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
