// Package enginepb is the generated Go code of vllm_engine.proto: the messages and the client and
// server stubs of vLLM's gRPC engine service (vllm.grpc.engine.VllmEngine).
//
// The tools are pinned to go.mod's google.golang.org/protobuf and a protoc-gen-go-grpc release:
//
//	go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
//	go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1
//	apt-get install -y protobuf-compiler
package enginepb

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative vllm_engine.proto
