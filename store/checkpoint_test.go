package store

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCheckpointRecordStable(t *testing.T) {
	// The stored form is an on-disk format: field names must not drift.
	cp := &Checkpoint{
		ID: "resp_1", Tenant: "acme", PreviousID: "resp_0", Model: "m", Status: "completed",
		CreatedAt:    time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
		InputItemIDs: []string{"a"}, OutputItemIDs: []string{"b"}, ConversationItemIDs: []string{"a", "b"},
		Instructions: "<i>", Response: json.RawMessage(`{"x":"<y>"}`), Request: json.RawMessage(`{}`),
		Mode: ModeExact, Fingerprint: [32]byte{31: 1}, PromptLen: 3, GeneratedIDs: []uint32{1, 300},
	}
	b, err := encodeCheckpoint(cp)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"v":1,"id":"resp_1","tenant":"acme","prev":"resp_0","model":"m","status":"completed",` +
		`"created_at":"2026-01-02T03:04:05.000000006Z","input":["a"],"output":["b"],"conversation":["a","b"],` +
		`"instructions":"<i>","response":{"x":"<y>"},"request":{},"mode":1,` +
		`"fp":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAE","prompt_len":3,"generated":"AgGsAg=="}`
	if string(b) != want {
		t.Errorf("encodeCheckpoint =\n%s\nwant\n%s", b, want)
	}
	got, err := decodeCheckpoint(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cp, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// FuzzDecodeCheckpoint: stored records are parsed on every read; corrupt ones
// must fail with ErrInvalid, never panic, and valid ones must re-encode stably.
func FuzzDecodeCheckpoint(f *testing.F) {
	cp := &Checkpoint{ID: "resp_1", Tenant: "acme", GeneratedIDs: []uint32{1, 2, 1 << 31}, Fingerprint: [32]byte{1}}
	b, _ := encodeCheckpoint(cp)
	f.Add(b)
	f.Add([]byte(`{"v":1}`))
	f.Add([]byte(`{"v":2,"id":"x"}`))
	f.Add([]byte(`{"v":1,"generated":"gICAgBA="}`))
	f.Add([]byte(`{"v":1,"fp":"AAAA"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		cp, err := decodeCheckpoint(b)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("decode error %v does not wrap ErrInvalid", err)
			}
			return
		}
		re, err := encodeCheckpoint(cp)
		if err != nil {
			return // e.g. invalid JSON inside a RawMessage field cannot be re-encoded
		}
		cp2, err := decodeCheckpoint(re)
		if err != nil {
			t.Fatalf("re-encoded checkpoint does not decode: %v", err)
		}
		// Compare encodings: RawMessage fields come back compacted, so the
		// first decode may differ from the second only in whitespace.
		re2, err := encodeCheckpoint(cp2)
		if err != nil || string(re) != string(re2) {
			t.Fatalf("encoding not stable: %v\n%s\n%s", err, re, re2)
		}
	})
}
