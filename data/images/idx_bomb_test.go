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
