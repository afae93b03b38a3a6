// Package splitguardpb holds the Go code generated from
// proto/splitguard.proto (protocol buffers and gRPC stubs of the
// splitguard.v1 wire protocol). Do not edit the *.pb.go files: change the
// .proto file and run scripts/genproto.sh.
package splitguardpb
