package sim

import "testing"

func seq(from, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(from + i)
	}
	return out
}

// TestPrefixCacheFullOfHeldBlocks: when every block is held by a running request, new blocks are
// not cached (nothing may be evicted), and the running request's blocks stay.
func TestPrefixCacheFullOfHeldBlocks(t *testing.T) {
	c := newPrefixCache(4, 3, false, 0, nil)
	key := cacheKey{salt: "s"}
	la, hit := c.acquire(key, seq(0, 12), true) // 3 blocks: the cache is full and all held
	if hit != 0 {
		t.Fatalf("cold hit = %d", hit)
	}
	lb, _ := c.acquire(key, seq(100, 8), true) // nothing to evict: not cached
	if st := c.stats(); st.blocks != 3 || st.used != 3 {
		t.Fatalf("stats %+v, want 3 blocks all used", st)
	}
	c.release(lb, seq(100, 9))
	if _, hit := c.acquire(key, seq(0, 13), true); hit != 12 {
		t.Errorf("held blocks were lost: hit %d, want 12", hit)
	}
	c.release(la, seq(0, 12))
}

// TestPrefixCacheLookupRules checks vLLM's lookup rules on a warm cache: whole blocks only, stop
// at the first miss, never the last prompt token.
func TestPrefixCacheLookupRules(t *testing.T) {
	c := newPrefixCache(4, 100, false, 0, nil)
	key := cacheKey{}
	l, _ := c.acquire(key, seq(0, 16), true)
	c.release(l, seq(0, 17)) // 16 prompt + 1 generated: blocks of the first 16 tokens are cached
	tests := []struct {
		name   string
		prompt []uint32
		want   int
	}{
		{"same prompt: capped at n-1", seq(0, 16), 12},
		{"one more token", seq(0, 17), 16},
		{"partial block", seq(0, 7), 4},
		{"diverges in block 2", append(seq(0, 6), seq(50, 10)...), 4},
		{"diverges in block 1", append([]uint32{99}, seq(1, 15)...), 0},
		{"other key", nil, 0},
		{"empty", []uint32{}, 0},
	}
	for _, tt := range tests {
		k, p := key, tt.prompt
		if p == nil {
			k, p = cacheKey{lora: "x"}, seq(0, 17)
		}
		l, hit := c.acquire(k, p, true)
		c.release(l, p)
		if hit != tt.want {
			t.Errorf("%s: hit %d, want %d", tt.name, hit, tt.want)
		}
	}
	if l, hit := c.acquire(key, seq(0, 17), false); hit != 0 {
		t.Errorf("readCache=false: hit %d", hit)
	} else {
		c.release(l, nil)
	}
}

// TestPrefixCacheHybrid checks the hybrid model's rule: a hit ends at a block whose recurrent
// state was saved (the prompt's last full block, and every block filled while decoding), so a
// prompt that diverges inside a long cached prefix reuses less than with full attention.
func TestPrefixCacheHybrid(t *testing.T) {
	warm := func(hybrid bool) *prefixCache {
		c := newPrefixCache(4, 100, hybrid, 0, nil)
		l, _ := c.acquire(cacheKey{}, seq(0, 10), true) // blocks 0,1; state at block 1
		c.release(l, seq(0, 17))                        // decode fills blocks 2,3 (tokens 8…15)
		return c
	}
	tests := []struct {
		name         string
		prompt       []uint32
		full, hybrid int
	}{
		{"continuation", seq(0, 20), 16, 16},
		{"diverges in block 1", append(seq(0, 6), seq(50, 10)...), 4, 0},
		{"diverges in block 2", append(seq(0, 9), seq(50, 10)...), 8, 8},
		{"diverges in block 4 of the decode", append(seq(0, 14), seq(50, 10)...), 12, 12},
		{"same prompt", seq(0, 10), 8, 8},
	}
	for _, tt := range tests {
		for _, hybrid := range []bool{false, true} {
			c := warm(hybrid)
			l, hit := c.acquire(cacheKey{}, tt.prompt, true)
			c.release(l, tt.prompt)
			want := tt.full
			if hybrid {
				want = tt.hybrid
			}
			if hit != want {
				t.Errorf("%s (hybrid %v): hit %d, want %d", tt.name, hybrid, hit, want)
			}
		}
	}
}

// TestPrefixCacheHybridChunks: a prefill run in chunks saves a state at each chunk's end, so a
// prompt diverging after a chunk boundary reuses up to it.
func TestPrefixCacheHybridChunks(t *testing.T) {
	for _, tt := range []struct {
		chunk, want int
	}{{0, 0}, {8, 8}, {12, 12}, {4, 12}} {
		c := newPrefixCache(4, 100, true, tt.chunk, nil)
		l, _ := c.acquire(cacheKey{}, seq(0, 24), true) // 6 blocks
		c.release(l, seq(0, 25))
		p := append(seq(0, 14), seq(90, 6)...) // shares 3 blocks and a half
		l, hit := c.acquire(cacheKey{}, p, true)
		c.release(l, p)
		if hit != tt.want {
			t.Errorf("chunk %d: hit %d, want %d", tt.chunk, hit, tt.want)
		}
	}
}
