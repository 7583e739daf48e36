package main

import (
	"net"
	"testing"
)

// TestLoopbackOnly decides serve's start-up warning: authentication off on a listener other
// hosts can reach.
func TestLoopbackOnly(t *testing.T) {
	for _, tt := range []struct {
		addr net.Addr
		want bool
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, true},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 8080}, true},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 8080}, false},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, false},
		{&net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 8080}, false},
		{&net.UnixAddr{Name: "/tmp/s", Net: "unix"}, false},
	} {
		if got := loopbackOnly(tt.addr); got != tt.want {
			t.Errorf("loopbackOnly(%v) = %v, want %v", tt.addr, got, tt.want)
		}
	}
}
