#!/bin/sh
# Regenerates proto/splitguardpb from proto/splitguard.proto.
#
# Needs protoc (Debian: apt-get install protobuf-compiler) and the Go
# plugins, at the versions the committed code was generated with:
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
#   go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
# The default build does not need any of these: the generated code is
# committed.
set -eu
cd "$(dirname "$0")/.."
PATH="$(go env GOPATH)/bin:$PATH"
for tool in protoc protoc-gen-go protoc-gen-go-grpc; do
	command -v "$tool" >/dev/null 2>&1 || {
		echo "genproto: $tool not found (see the comment at the top of $0)" >&2
		exit 1
	}
done
protoc \
	--proto_path=proto \
	--go_out=. --go_opt=module=github.com/splitguard/splitguard \
	--go-grpc_out=. --go-grpc_opt=module=github.com/splitguard/splitguard \
	proto/splitguard.proto
gofmt -l proto/splitguardpb
echo "genproto: wrote proto/splitguardpb"
