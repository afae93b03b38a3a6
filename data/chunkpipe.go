package data

import (
	"errors"
	"io"
	"sync"
)

// chunkPipe is an in-memory pipe whose writer runs ahead of its reader
// by up to a few written chunks. io.Pipe hands each Write to the reader
// synchronously: a generator writing 1 MiB at a time waited until the
// reader had taken all of it, and the reader waited while the generator
// made the next, so making and reading a generated table took turns
// instead of running on two cores. The bytes read are the bytes written,
// in order.
type chunkPipe struct {
	full chan []byte   // written chunks, in order; closed by closeWrite
	free chan []byte   // chunks the reader is done with, for reuse
	done chan struct{} // closed by closeRead
	once sync.Once
	werr error // the writer's error, set before full is closed

	cur []byte // the unread rest of the reader's chunk
	buf []byte // the reader's chunk, whole
}

// errPipeReaderDone is what a Write gets after the reader stopped.
var errPipeReaderDone = errors.New("data: the reader of the pipe stopped")

// newChunkPipe returns a pipe holding up to depth written chunks that the
// reader has not taken yet.
func newChunkPipe(depth int) *chunkPipe {
	return &chunkPipe{full: make(chan []byte, depth), free: make(chan []byte, depth+1), done: make(chan struct{})}
}

// Write copies b into a chunk of its own and queues it, waiting while
// the pipe is full; after closeRead it returns errPipeReaderDone.
func (p *chunkPipe) Write(b []byte) (int, error) {
	var c []byte
	select {
	case c = <-p.free:
	default:
	}
	c = append(c[:0], b...)
	select {
	case p.full <- c:
		return len(b), nil
	case <-p.done:
		return 0, errPipeReaderDone
	}
}

// closeWrite ends the stream: the reader gets err after the queued
// chunks, or io.EOF when err is nil. Only the writer calls it, once.
func (p *chunkPipe) closeWrite(err error) {
	p.werr = err
	close(p.full)
}

// Read reads the queued chunks in order.
func (p *chunkPipe) Read(b []byte) (int, error) {
	for len(p.cur) == 0 {
		if p.buf != nil {
			select {
			case p.free <- p.buf[:0]:
			default:
			}
			p.buf = nil
		}
		c, ok := <-p.full
		if !ok {
			if p.werr != nil {
				return 0, p.werr
			}
			return 0, io.EOF
		}
		p.buf, p.cur = c, c
	}
	n := copy(b, p.cur)
	p.cur = p.cur[n:]
	return n, nil
}

// closeRead tells a writer waiting on a full pipe, and every later
// Write, that nothing more will be read.
func (p *chunkPipe) closeRead() { p.once.Do(func() { close(p.done) }) }
