package store_test

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestMain silences go-redis's process-wide logger: the Redis-down tests
// make it print every refused dial. (Test-only; the package never touches it.)
func TestMain(m *testing.M) {
	redis.SetLogger(discardRedisLog{})
	os.Exit(m.Run())
}

type discardRedisLog struct{}

func (discardRedisLog) Printf(context.Context, string, ...any) {}

// waitFor retries op until it succeeds: a readiness loop for a client
// reconnecting to a restarted server (go-redis may back off dialing for up to
// a second after failures). It fails the test after 20 seconds.
func waitFor(t *testing.T, op func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := op()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no recovery after 20s: %v", err)
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// silentServer accepts TCP connections and never answers.
func silentServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				for _, c := range conns {
					c.Close()
				}
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
	})
	return l.Addr().String()
}
