package data

import (
	"strings"
	"testing"
)

// TestNonUTF8ColumnNameRefused: a header name that is not UTF-8 is refused
// with the file, line and field (it used to be saved in the encoding as
// U+FFFD, after which the model could not be served).
func TestNonUTF8ColumnNameRefused(t *testing.T) {
	p := writeFile(t, "latin1.csv", "uid,ville,r\xe9gion,target\nu1,paris,idf,1\nu2,lyon,ara,0\n")
	_, err := Load(p, Options{Format: FormatCSV, LabelCol: "target", IDCol: "uid", TestFrac: -1})
	if err == nil || !strings.Contains(err.Error(), "latin1.csv") || !strings.Contains(err.Error(), "line 1") ||
		!strings.Contains(err.Error(), `header field 3 ("r\xe9gion") is not valid UTF-8`) {
		t.Fatalf("got %v", err)
	}
}
