package completion

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ReadLabels reads an attacker's label file: one "id,label" line per
// example (decimal example ID, label 0 or 1), an optional first line
// "id,label", blank lines ignored. name is used in errors, which give the
// line and column of what is wrong. An ID listed twice is an error.
func ReadLabels(r io.Reader, name string) (map[uint64]uint8, error) {
	out := map[uint64]uint8{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(text) == "" {
			continue
		}
		if line == 1 && strings.EqualFold(strings.ReplaceAll(text, " ", ""), "id,label") {
			continue
		}
		idText, labelText, ok := strings.Cut(text, ",")
		if !ok {
			return nil, fmt.Errorf("labels %s line %d: %q is not \"id,label\"", name, line, text)
		}
		id, err := strconv.ParseUint(strings.TrimSpace(idText), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("labels %s line %d column 1: example ID %q is not a non-negative integer", name, line, idText)
		}
		var y uint8
		switch strings.TrimSpace(labelText) {
		case "0":
		case "1":
			y = 1
		default:
			return nil, fmt.Errorf("labels %s line %d column %d: label %q, want 0 or 1", name, line, len(idText)+2, labelText)
		}
		if _, dup := out[id]; dup {
			return nil, fmt.Errorf("labels %s line %d: example ID %d is listed twice", name, line, id)
		}
		out[id] = y
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("labels %s line %d: %w", name, line+1, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("labels %s: no labels", name)
	}
	return out, nil
}
