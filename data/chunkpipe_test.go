package data

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"time"
)

// TestChunkPipeCarriesTheBytesInOrder: what goes in by Writes of any size
// comes out by Reads of any size, byte for byte, then io.EOF or the
// writer's error.
func TestChunkPipeCarriesTheBytesInOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	want := make([]byte, 1<<20+17)
	for i := range want {
		want[i] = byte(r.Uint32())
	}
	for _, werr := range []error{nil, errors.New("generator failed")} {
		p := newChunkPipe(2)
		go func() {
			for rest := want; len(rest) > 0; {
				n := min(len(rest), 1+r.IntN(70000))
				if _, err := p.Write(rest[:n]); err != nil {
					t.Error(err)
					return
				}
				rest = rest[n:]
			}
			p.closeWrite(werr)
		}()
		var got bytes.Buffer
		buf := make([]byte, 4093)
		var err error
		for {
			var n int
			n, err = p.Read(buf[:1+got.Len()%len(buf)])
			got.Write(buf[:n])
			if err != nil {
				break
			}
		}
		if wantErr := werr; (wantErr == nil && err != io.EOF) || (wantErr != nil && err != wantErr) {
			t.Fatalf("the read ended with %v, want %v", err, wantErr)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("%d bytes read differ from the %d written", got.Len(), len(want))
		}
	}
}

// TestChunkPipeWriterRunsAheadAndStops: the writer queues chunks without
// a reader up to the pipe's depth, then waits; closeRead releases it with
// an error.
func TestChunkPipeWriterRunsAheadAndStops(t *testing.T) {
	p := newChunkPipe(3)
	for i := range 3 {
		if _, err := p.Write([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	blocked := make(chan error, 1)
	go func() { _, err := p.Write([]byte{3}); blocked <- err }()
	select {
	case err := <-blocked:
		t.Fatalf("a fourth Write into a pipe of depth 3 returned (%v) without a reader", err)
	case <-time.After(50 * time.Millisecond):
	}
	p.closeRead()
	if err := <-blocked; !errors.Is(err, errPipeReaderDone) {
		t.Fatalf("the waiting Write got %v after closeRead, want errPipeReaderDone", err)
	}
}
