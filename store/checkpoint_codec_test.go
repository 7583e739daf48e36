package store

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// jsonRecord is what encoding/json writes for r, as encodeCheckpoint did before
// appendCheckpointRecord.
func jsonRecord(t testing.TB, r *checkpointRecord) ([]byte, error) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// codecRecords are records with every member set, unset, and holding what JSON escapes.
func codecRecords() []checkpointRecord {
	at := time.Date(2026, 12, 7, 4, 23, 6, 123456789, time.UTC)
	full := checkpointRecord{
		V: 1, ID: "resp_1", Tenant: "acme", PreviousID: "resp_0", Model: "qwen", Status: "completed", CreatedAt: at,
		Input: []string{"msg_a"}, Output: []string{"msg_b", "fc_c"}, Conversation: []string{"msg_0", "msg_a", "msg_b", "fc_c"},
		Instructions: "Be brief.\n\t\"quoted\" \\ <b>&amp; é \u2028 \x01 \x7f 日本",
		Response:     json.RawMessage(`{"id":"resp_1","output":[{"text":"a <b> \u00e9 \n"}],"n":1.5e3,"ok":true,"x":null}`),
		Request:      json.RawMessage(` { "tools" : [ ] } `),
		Mode:         ModeExact, Fingerprint: "AAEC", PromptLen: 12345,
		Generated: []byte{1, 2, 3, 250}, Suffix: []byte{0x80, 0x01},
		Notes: map[string]string{"msg_b": "<|start|>assistant", "fc_c": "x\ny", "a\"b": "é"},
	}
	empty := checkpointRecord{V: 1, ID: "resp_2", Tenant: "t"}
	emptyLists := full
	emptyLists.Input, emptyLists.Output, emptyLists.Conversation = []string{}, nil, []string{}
	emptyLists.Notes = map[string]string{}
	zeroTime := checkpointRecord{V: 1, ID: "resp_3", Tenant: "t", CreatedAt: time.Time{}, Generated: []byte{}}
	badUTF8 := full
	badUTF8.Conversation = []string{"msg_\xff"}
	badRaw := full
	badRaw.Response = json.RawMessage(`{"a":`)
	farYear := full
	farYear.CreatedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	return []checkpointRecord{full, empty, emptyLists, zeroTime, badUTF8, badRaw, farYear}
}

// TestAppendCheckpointRecordIsEncodingJSON checks that the record written is encoding/json's
// byte for byte, or left to it.
func TestAppendCheckpointRecordIsEncodingJSON(t *testing.T) {
	for i, r := range codecRecords() {
		want, wantErr := jsonRecord(t, &r)
		got, ok := appendCheckpointRecord([]byte("prefix"), &r)
		switch {
		case !ok && string(got) != "prefix":
			t.Errorf("record %d: left to encoding/json but appended %q", i, got)
		case ok && wantErr != nil:
			t.Errorf("record %d: encoded %s, encoding/json fails: %v", i, got, wantErr)
		case ok && !bytes.Equal(got[len("prefix"):], want):
			t.Errorf("record %d:\n got %s\nwant %s", i, got[len("prefix"):], want)
		}
	}
	// encodeCheckpoint's output, whichever encoder wrote it, is encoding/json's.
	cp := &Checkpoint{ID: "resp_x", Tenant: "acme", ConversationItemIDs: []string{"msg_\xff"}, CreatedAt: time.Unix(1, 0)}
	b, err := encodeCheckpoint(cp)
	if err != nil {
		t.Fatal(err)
	}
	if back, err := decodeCheckpoint(b); err != nil || back.ConversationItemIDs[0] != "msg_\ufffd" {
		t.Errorf("invalid UTF-8 round trip = %v, %v", back, err)
	}
}

// TestParseCheckpointRecordIsUnmarshal checks that parseCheckpointRecord, where it reads a record,
// reads what json.Unmarshal does, on records as written and on their corruptions and respellings.
func TestParseCheckpointRecordIsUnmarshal(t *testing.T) {
	var inputs [][]byte
	for _, r := range codecRecords() {
		b, err := jsonRecord(t, &r)
		if err != nil {
			continue
		}
		inputs = append(inputs, b)
	}
	base := inputs[0]
	respelled := []string{
		strings.Replace(string(base), `"id":"resp_1"`, `"id":"resp\u005f1"`, 1),
		strings.Replace(string(base), `"id":"resp_1"`, `"ID":"resp_9"`, 1),
		strings.Replace(string(base), `"v":1`, `"v":1,"v":2`, 1),
		strings.Replace(string(base), `"v":1`, `"v":1.0`, 1),
		strings.Replace(string(base), `"v":1`, `"v":01`, 1),
		strings.Replace(string(base), `"v":1`, `"v":-1`, 1),
		strings.Replace(string(base), `"v":1`, `"v":null`, 1),
		strings.Replace(string(base), `"mode":1`, `"mode":256`, 1),
		strings.Replace(string(base), `"input":["msg_a"]`, `"input":null`, 1),
		strings.Replace(string(base), `"input":["msg_a"]`, `"input":[]`, 1),
		strings.Replace(string(base), `"input":["msg_a"]`, `"input":["msg_a",]`, 1),
		strings.Replace(string(base), `"input":["msg_a"]`, `"input":["msg_a" ]`, 1),
		strings.Replace(string(base), `"input":["msg_a"]`, `"input":[1]`, 1),
		strings.Replace(string(base), `"input":["msg_a"]`, `"input":["é\t"]`, 1),
		strings.Replace(string(base), `"input":["msg_a"]`, `"input":["\ud800"]`, 1),
		strings.Replace(string(base), `"prompt_len":12345`, `"prompt_len":1e3`, 1),
		strings.Replace(string(base), `"prompt_len":12345`, `"prompt_len":99999999999999999999`, 1),
		strings.Replace(string(base), `"generated":"AQID+g=="`, `"generated":"AQID+g="`, 1),
		strings.Replace(string(base), `"generated":"AQID+g=="`, `"generated":null`, 1),
		strings.Replace(string(base), `"generated":"AQID+g=="`, `"generated":"AQ\u0049D+g=="`, 1),
		strings.Replace(string(base), `"created_at":"2026`, `"created_at":"x2026`, 1),
		strings.Replace(string(base), `"created_at":"2026-12-07T04:23:06.123456789Z"`, `"created_at":null`, 1),
		strings.Replace(string(base), `"response":{`, `"response":{"a":[}],`, 1),
		strings.Replace(string(base), `"response":{`, `"response":nul`, 1),
		strings.Replace(string(base), `"notes":{`, `"notes":{"k":1,`, 1),
		strings.Replace(string(base), `"tenant":"acme"`, `"tenant":"acme","extra":{"a":[1,2]}`, 1),
		string(base) + " ",
		string(base) + "}",
		" " + string(base),
		"{}",
		"[]",
		"null",
		"",
	}
	for _, s := range respelled {
		inputs = append(inputs, []byte(s))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 { // corruptions: a byte changed, dropped or the record cut short
		b := append([]byte(nil), base...)
		k := rng.IntN(len(b))
		switch rng.IntN(3) {
		case 0:
			const junk = "\"\\,:{}[]0a \x00\xff"
			b[k] = junk[rng.IntN(len(junk))]
		case 1:
			b = append(b[:k], b[k+1:]...)
		case 2:
			b = b[:k]
		}
		inputs = append(inputs, b)
	}
	parsed := 0
	for _, b := range inputs {
		var want checkpointRecord
		wantErr := json.Unmarshal(b, &want)
		var got checkpointRecord
		if !parseCheckpointRecord(b, &got) {
			continue
		}
		parsed++
		if wantErr != nil {
			t.Errorf("parsed %q, which json.Unmarshal rejects: %v", b, wantErr)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("parse %q:\n got %+v\nwant %+v", b, got, want)
		}
	}
	if parsed < len(codecRecords())-3 {
		t.Errorf("only %d of the inputs parsed: the records as written should", parsed)
	}
}

func BenchmarkCheckpointCodec(b *testing.B) {
	cp := &Checkpoint{ID: "resp_0123456789abcdef0123456789abcdef", Tenant: "acme", PreviousID: "resp_prev", Model: "qwen",
		Status: "completed", CreatedAt: time.Now(), Instructions: "Be brief.",
		Response: json.RawMessage(`{"id":"resp_x","object":"response","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"` +
			strings.Repeat("words ", 400) + `"}]}]}`),
		GeneratedIDs: make([]uint32, 72), PromptLen: 100_000}
	for i := range 130 { // a 100k-token conversation's items
		cp.ConversationItemIDs = append(cp.ConversationItemIDs, "msg_0123456789abcdef0123456789abcdef0123456789ab"+string(rune('a'+i%26)))
	}
	rec, err := encodeCheckpoint(cp)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encodeCheckpoint(cp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeCheckpoint(rec); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestValidJSONIsEncodingJSON checks validJSON against json.Valid, nesting far past
// recursiveValidDepth included (encoding/json's validator then, which cannot exhaust the stack).
func TestValidJSONIsEncodingJSON(t *testing.T) {
	deep := strings.Repeat("[", 200_000) + strings.Repeat("]", 200_000)
	inputs := []string{
		`{"a":1}`, `[1,2.5e3,-0,"x\u00e9",true,null]`, `01`, `1.`, "\"\x01\"", `{"a":[}`, ` {} `, `"\ud800"`, "\"\xff\"",
		`-`, `1e`, `{"a" :1 , "b":[ ] }`, `"\/"`, `"\q"`, "\t[]\n", `[1,]`, `{,}`, ``, ` `, `nul`, `truex`, `{"a":1}}`,
		deep, deep[:len(deep)-1], strings.Repeat("[", recursiveValidDepth) + strings.Repeat("]", recursiveValidDepth),
	}
	for _, s := range inputs {
		if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("validJSON(%.40q) = %v, json.Valid %v", s, got, want)
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,"b",{"c":null}]}`, `[1,]`, `"\u12"`, `-0.5e+3`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid %v", b, got, want)
		}
	})
}

// FuzzParseCheckpointRecord: whatever parseCheckpointRecord reads, json.Unmarshal reads alike.
func FuzzParseCheckpointRecord(f *testing.F) {
	for _, r := range codecRecords() {
		if b, err := jsonRecord(f, &r); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got checkpointRecord
		if !parseCheckpointRecord(b, &got) {
			return
		}
		var want checkpointRecord
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("parsed %q, which json.Unmarshal rejects: %v", b, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("parse %q:\n got %+v\nwant %+v", b, got, want)
		}
	})
}
