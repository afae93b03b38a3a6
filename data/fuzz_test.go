package data

import (
	"bufio"
	"bytes"
	"image"
	jpegenc "image/jpeg"
	pngenc "image/png"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadTable feeds arbitrary text to the table readers (Criteo, Avazu,
// CSV): they must return a split or an error, never panic, and a split
// must be consistent (one ID and label per row).
func FuzzReadTable(f *testing.F) {
	f.Add([]byte("1\t1\t2\t\t4\t5\t6\t7\t8\t9\t10\t11\t12\t13\ta\tb\tc\td\te\tf\tg\th\ti\tj\tk\tl\tm\tn\to\tp\tq\tr\ts\tt\tu\tv\tw\tx\ty\tz\n"), uint8(0))
	f.Add([]byte("id,click,hour,C1,banner_pos\n1,0,14102100,1005,0\n2,1,14102100,1005,1\n"), uint8(1))
	f.Add([]byte("uid,city,score,target\nu1,paris,1.5,yes\nu2,lyon,2.5,no\n"), uint8(2))
	f.Fuzz(func(t *testing.T, b []byte, format uint8) {
		var o Options
		switch format % 3 {
		case 0:
			o = Options{Format: FormatCriteo}
		case 1:
			o = Options{Format: FormatAvazu}
		default:
			o = Options{Format: FormatCSV, LabelCol: "target", Positive: "yes", IDCol: "uid"}
		}
		o.TestFrac, o.SkipBadRows = -1, format&4 != 0
		s, err := LoadReader(bytes.NewReader(b), "fuzz", o)
		if err != nil {
			return
		}
		d := s.Train
		if d.Labels != nil && len(d.Labels) != len(d.IDs) {
			t.Fatalf("%d labels for %d IDs", len(d.Labels), len(d.IDs))
		}
	})
}

// FuzzDecodeIDX feeds arbitrary bytes (plain or gzipped) to the IDX
// decoder: an error or data that fills the declared dimensions exactly.
func FuzzDecodeIDX(f *testing.F) {
	f.Add([]byte{0, 0, 8, 3, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 2, 1, 2, 3, 4})
	f.Add([]byte{0, 0, 8, 1, 0, 0, 0, 3, 0, 1, 9})
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, magic := range []uint32{idxImagesMagic, idxLabelsMagic} {
			dims, body, err := decodeIDX(bufio.NewReader(bytes.NewReader(b)), magic)
			if err != nil {
				continue
			}
			n := 1
			for _, d := range dims {
				n *= d
			}
			if len(body) != n {
				t.Fatalf("dims %v with %d bytes", dims, len(body))
			}
		}
	})
}

// FuzzReadEncoding feeds arbitrary bytes to the encoding reader; an
// encoding it accepts is written back and read again to the same bytes.
func FuzzReadEncoding(f *testing.F) {
	e := &Encoding{}
	var buf bytes.Buffer
	if _, err := e.WriteTo(&buf); err == nil {
		f.Add(buf.Bytes())
	}
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := ReadEncoding(bytes.NewReader(b), "fuzz")
		if err != nil {
			return
		}
		var w1, w2 bytes.Buffer
		if _, err := e.WriteTo(&w1); err != nil {
			t.Fatalf("an accepted encoding does not write: %v", err)
		}
		e2, err := ReadEncoding(bytes.NewReader(w1.Bytes()), "again")
		if err != nil {
			t.Fatalf("a written encoding does not read: %v", err)
		}
		if _, err := e2.WriteTo(&w2); err != nil || !bytes.Equal(w1.Bytes(), w2.Bytes()) {
			t.Fatalf("the round trip changed the encoding (%v)", err)
		}
	})
}

// FuzzDecodeImage feeds arbitrary bytes as an image file to the ISIC
// image decoder: an error or an image within the size bound, never a
// panic or a decode of an implausibly large image.
func FuzzDecodeImage(f *testing.F) {
	var png bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 3, 2))
	if err := pngenc.Encode(&png, img); err != nil {
		f.Fatal(err)
	}
	f.Add(png.Bytes())
	var jpg bytes.Buffer
	if err := jpegenc.Encode(&jpg, img, nil); err != nil {
		f.Fatal(err)
	}
	f.Add(jpg.Bytes())
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(dir, "img")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		m, err := decodeImage(path)
		if err != nil {
			return
		}
		if r := m.Bounds(); r.Dx()*r.Dy() > 1<<26 {
			t.Fatalf("decoded a %v image", r)
		}
	})
}
