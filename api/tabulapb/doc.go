// Package tabulapb holds Tabula's RPC contracts: tabula.proto and the Go code
// protoc generates from it (committed; `make proto` regenerates it with
// protoc from Debian's protobuf-compiler and the protoc-gen-go and
// protoc-gen-go-grpc plugins from the Go module proxy).
package tabulapb
