package images

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"runtime"
	"strings"
	"testing"
)

// TestIDXGzipBomb: a gzipped IDX file of a few kilobytes whose header
// declares 10 images of 28×28 but which decompresses to 64 MiB is refused
// after reading what the header declares (plus one byte), without
// decompressing the rest: the heap grows by far less than the bomb (the
// reader used to decompress everything, 4.57 GB for such a file).
func TestIDXGzipBomb(t *testing.T) {
	var raw bytes.Buffer
	zw, err := gzip.NewWriterLevel(&raw, gzip.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	hdr := binary.BigEndian.AppendUint32(nil, idxImagesMagic)
	for _, d := range []uint32{10, 28, 28} {
		hdr = binary.BigEndian.AppendUint32(hdr, d)
	}
	zw.Write(hdr)
	zeros := make([]byte, 1<<20)
	for range 64 {
		zw.Write(zeros)
	}
	zw.Close()
	if raw.Len() > 2<<20 {
		t.Fatalf("the bomb is %d bytes", raw.Len())
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, _, err = decodeIDX(bufio.NewReader(bytes.NewReader(raw.Bytes())), idxImagesMagic)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "more than 7840 data bytes") {
		t.Fatalf("got %v", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Fatalf("decoding allocated %d bytes for a file declaring 7840", grew)
	}
}

// gzipIDX returns a gzipped IDX image file whose header declares dims and
// whose data are n zero bytes.
func gzipIDX(t *testing.T, dims []uint32, n int) []byte {
	t.Helper()
	var raw bytes.Buffer
	zw, err := gzip.NewWriterLevel(&raw, gzip.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	hdr := binary.BigEndian.AppendUint32(nil, idxImagesMagic)
	for _, d := range dims {
		hdr = binary.BigEndian.AppendUint32(hdr, d)
	}
	zw.Write(hdr)
	zeros := make([]byte, 1<<20)
	for n > 0 {
		k := min(n, len(zeros))
		zw.Write(zeros[:k])
		n -= k
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return raw.Bytes()
}

// TestIDXDeclaredSizeBounded: a small gzipped IDX file whose header
// declares 1 GiB (4194304×16×16, the size its data would have if it held
// them) is refused at the header, naming MaxIDXBytes' value, and one
// declaring less than the limit but holding only 1 MiB fails after
// reading that 1 MiB: neither allocates anywhere near what its header
// declares (the reader used to hold 4.2 GB for the first).
func TestIDXDeclaredSizeBounded(t *testing.T) {
	for _, c := range []struct {
		name string
		dims []uint32
		want string
	}{
		{"1 GiB declared", []uint32{4194304, 16, 16}, "declare more than 268435456 bytes"},
		{"just over the limit", []uint32{MaxIDXBytes/256 + 1, 16, 16}, "declare more than 268435456 bytes"},
		{"short of its header", []uint32{MaxIDXBytes / 256, 16, 16}, "1048576 data bytes, the header's dimensions [1048576 16 16] need 268435456"},
	} {
		file := gzipIDX(t, c.dims, 1<<20)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, _, err := decodeIDX(bufio.NewReader(bytes.NewReader(file)), idxImagesMagic)
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
			t.Errorf("%s: decoding allocated %d bytes", c.name, grew)
		}
	}
	// Within the limit a file that holds its data is read.
	dims, body, err := decodeIDX(bufio.NewReader(bytes.NewReader(gzipIDX(t, []uint32{4096, 16, 16}, 1<<20))), idxImagesMagic)
	if err != nil || len(body) != 1<<20 || dims[0] != 4096 {
		t.Fatalf("a 1 MiB file: %v, %d bytes", err, len(body))
	}
}
