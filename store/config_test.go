package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseMode(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Mode
		ok   bool
	}{{"canonical", ModeCanonical, true}, {"exact", ModeExact, true}, {"", 0, false}, {"Exact", 0, false}, {"full", 0, false}} {
		got, err := ParseMode(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseMode(%q) = %v, %v; want %v, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
		if tt.ok && got.String() != tt.in {
			t.Errorf("ParseMode(%q).String() = %q", tt.in, got.String())
		}
	}
}

func TestParseRedisURL(t *testing.T) {
	for _, tt := range []struct {
		in, err string
		check   func(RedisOptions) bool
	}{
		{in: "redis://localhost:6379", check: func(o RedisOptions) bool {
			return len(o.Addrs) == 1 && o.Addrs[0] == "localhost:6379" && !o.Cluster && o.TLS == nil
		}},
		{in: "rediss://u:p@h:1/3", check: func(o RedisOptions) bool { return o.Username == "u" && o.Password == "p" && o.DB == 3 && o.TLS != nil }},
		{in: "redis://a:1,b:2", check: func(o RedisOptions) bool { return len(o.Addrs) == 2 }},
		{in: "redis://a:1?cluster=true", check: func(o RedisOptions) bool { return o.Cluster }},
		{in: "redis+sentinel://s1:26379,s2:26379/mymaster/2?sentinel_password=sp", check: func(o RedisOptions) bool {
			return len(o.Addrs) == 2 && o.MasterName == "mymaster" && o.DB == 2 && o.SentinelPassword == "sp" && o.TLS == nil
		}},
		{in: "rediss+sentinel://u:p@s1:26379/mymaster", check: func(o RedisOptions) bool {
			return o.MasterName == "mymaster" && o.Password == "p" && o.DB == 0 && o.TLS != nil
		}},
		{in: "redis+sentinel://s1:26379", err: "needs the master's name"},
		{in: "redis+sentinel://s1:26379/m?cluster=true", err: "cannot be a cluster"},
		{in: "redis://a:1,b:2/3", err: "only database 0"},
		{in: "http://a:1", err: "want redis://"},
		{in: "redis://", err: "want redis://"},
		{in: "redis://a:1/x", err: `database "x" is not a number`},
	} {
		o, err := ParseRedisURL(tt.in)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseRedisURL(%q) = %v, want an error with %q", tt.in, err, tt.err)
		case tt.err == "" && (err != nil || !tt.check(o)):
			t.Errorf("ParseRedisURL(%q) = %+v, %v", tt.in, o, err)
		}
	}
}

func TestLoadSealKeys(t *testing.T) {
	keys, err := LoadSealKeys("")
	if err != nil || len(keys) != 1 || len(keys[0].Secret) != 32 {
		t.Fatalf("LoadSealKeys(\"\") = %v, %v; want one random 32-byte key", keys, err)
	}
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	keys, err = LoadSealKeys(write("ok.json", `[{"id":"k1","secret":"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="},{"id":"k0","secret":"YQ=="}]`))
	if err != nil || len(keys) != 2 || keys[0].ID != "k1" || string(keys[0].Secret) != "0123456789abcdef0123456789abcdef" {
		t.Errorf("LoadSealKeys(ok) = %v, %v", keys, err)
	}
	for name, data := range map[string]string{"empty.json": `[]`, "bad.json": `{`, "b64.json": `[{"id":"k","secret":"!!"}]`} {
		if _, err := LoadSealKeys(write(name, data)); err == nil {
			t.Errorf("LoadSealKeys(%s) = nil error", name)
		}
	}
	if _, err := LoadSealKeys(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("LoadSealKeys(missing) = nil error")
	}
}
