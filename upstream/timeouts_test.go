package upstream

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// TestIdleTimerWaitsForTheLastByte: reads only record when bytes came; when the idle timer fires
// it fails the stream only if the last byte is a whole bound old, and otherwise waits again for
// the rest of the bound. The timer is driven by hand (checkIdle), so nothing here waits.
func TestIdleTimerWaitsForTheLastByte(t *testing.T) {
	const idle = time.Hour
	w := &Watchdog{Idle: idle}
	rc, err := w.Open(context.Background(), func(ctx context.Context) (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader(strings.Repeat("x", 200))), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	wb := rc.(*watchedBody)
	if _, err := wb.Read(make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	wb.mu.Lock()
	armed := wb.timer != nil
	wb.mu.Unlock()
	if !armed {
		t.Fatal("the first byte did not start the idle timer")
	}
	for range 100 { // later reads move nothing but the last byte's time
		before := wb.last.Load()
		if _, err := wb.Read(make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		if wb.last.Load() < before {
			t.Fatal("the last byte's time went back")
		}
	}
	wb.checkIdle() // fired early (a byte came just now): waits again
	if err := context.Cause(wb.ctx); err != nil {
		t.Fatalf("a stream with a byte just now failed: %v", err)
	}
	wb.last.Store(time.Now().Add(-idle - time.Second).UnixNano())
	wb.checkIdle() // no byte for longer than the bound
	if err := context.Cause(wb.ctx); !errors.Is(err, ErrTimeout) {
		t.Fatalf("idle stream's cause %v, want ErrTimeout", err)
	}
	wb.stop()
	wb.checkIdle() // a timer that fires after stop does nothing
}
