package main

import (
	"fmt"
	"log/slog"
	"net"

	"google.golang.org/grpc"

	"github.com/stitchllm/stitch/sim"
)

// simGRPCMaxMessage matches the client's limit: a long prompt's ids exceed gRPC's 4 MiB default.
const simGRPCMaxMessage = 64 << 20

// serveSimGRPC serves s's gRPC engine API on addr in the background. stop ends it, letting running
// streams finish.
func serveSimGRPC(logger *slog.Logger, s *sim.Server, addr string) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("grpc listen: %w", err)
	}
	gs := grpc.NewServer(grpc.MaxRecvMsgSize(simGRPCMaxMessage), grpc.MaxSendMsgSize(simGRPCMaxMessage))
	s.RegisterGRPC(gs)
	logger.Info("vLLM simulator gRPC engine listening", "addr", ln.Addr().String())
	go func() {
		if err := gs.Serve(ln); err != nil {
			logger.Error("grpc serve", "err", err)
		}
	}()
	return gs.GracefulStop, nil
}
