package wire

import (
	"fmt"
	"strings"
)

// Compression is the lossless compression of the packed tensors on the
// wire (key wire_compression). It changes the bytes sent, never the
// values: a compressed tensor decodes to the same numbers. The zero value
// is None.
type Compression uint8

// The compressions; their numbers are those of the wire format
// (proto/splitguard.proto, enum Compression).
const (
	None Compression = 0 // the packed bytes as they are
	Zstd Compression = 1 // each packed field a zstd frame (transport/grpcnet)
)

var compressionNames = [...]string{None: "none", Zstd: "zstd"}

// CompressionNames lists the compressions' names in order.
func CompressionNames() []string { return append([]string(nil), compressionNames[:]...) }

// String returns the compression's name (none, zstd).
func (c Compression) String() string {
	if c.Valid() {
		return compressionNames[c]
	}
	return fmt.Sprintf("compression(%d)", uint8(c))
}

// Valid reports whether c is one of the defined compressions.
func (c Compression) Valid() bool { return int(c) < len(compressionNames) }

// ParseCompression returns the compression named s.
func ParseCompression(s string) (Compression, error) {
	for i, n := range compressionNames {
		if s == n {
			return Compression(i), nil
		}
	}
	return 0, fmt.Errorf("unknown wire compression %q (want one of %s)", s, strings.Join(compressionNames[:], ", "))
}
