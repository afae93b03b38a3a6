package main

import (
	"fmt"
	"regexp"
	"strings"
)

// docCommand is one shell command found in a Markdown page's ```sh blocks:
// its words after variable expansion, and where it starts.
type docCommand struct {
	file  string
	line  int
	words []string
}

func (c docCommand) String() string {
	return fmt.Sprintf("%s:%d: %s", c.file, c.line, strings.Join(c.words, " "))
}

// splitguardArgs returns the arguments after the program of a command that
// runs splitguard ("splitguard …" or "go run ./cmd/splitguard …"), and
// whether it does.
func (c docCommand) splitguardArgs() ([]string, bool) {
	w := c.words
	switch {
	case len(w) >= 1 && w[0] == "splitguard":
		return w[1:], true
	case len(w) >= 3 && w[0] == "go" && w[1] == "run" && w[2] == "./cmd/splitguard":
		return w[3:], true
	}
	return nil, false
}

var shellVariable = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?`)

// shellCommands returns the commands of the ```sh (and ```bash) fenced
// blocks of a Markdown page: lines joined at a trailing backslash, comments
// dropped, commands separated at ;, &&, || and |, leading VAR=value
// assignments removed (an assignment alone on a line defines VAR for the
// later lines of the page, as a shell session would), $VAR expanded.
func shellCommands(file, markdown string) ([]docCommand, error) {
	var out []docCommand
	vars := map[string]string{}
	inBlock := false
	lines := strings.Split(markdown, "\n")
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimSpace(lines[i])
		if strings.HasPrefix(trimmed, "```") {
			lang := strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))
			switch {
			case inBlock:
				inBlock = false
			case lang == "sh" || lang == "bash" || lang == "shell":
				inBlock = true
			default:
				// another language's block, or an untagged one (a
				// synopsis, a program's output): skip it
				for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "```"); i++ {
				}
			}
			continue
		}
		if !inBlock {
			continue
		}
		start := i + 1
		text := lines[i]
		for strings.HasSuffix(strings.TrimRight(text, " \t"), `\`) && i+1 < len(lines) {
			text = strings.TrimSuffix(strings.TrimRight(text, " \t"), `\`) + " " + lines[i+1]
			i++
		}
		text = shellVariable.ReplaceAllStringFunc(text, func(m string) string {
			name := shellVariable.FindStringSubmatch(m)[1]
			if v, ok := vars[name]; ok {
				return v
			}
			return m
		})
		cmds, err := splitShellLine(text)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", file, start, err)
		}
		for _, words := range cmds {
			for len(words) > 0 && isAssignment(words[0]) {
				if len(words) == 1 {
					k, v, _ := strings.Cut(words[0], "=")
					vars[k] = v
				}
				words = words[1:]
			}
			if len(words) > 0 {
				out = append(out, docCommand{file: file, line: start, words: words})
			}
		}
	}
	if inBlock {
		return nil, fmt.Errorf("%s: a ```sh block is not closed", file)
	}
	return out, nil
}

var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

func isAssignment(word string) bool { return assignment.MatchString(word) }

// splitShellLine splits one shell line into commands of words, honouring
// single and double quotes and backslash escapes, dropping a comment that
// starts a word, and separating commands at ;, &&, || and |.
func splitShellLine(line string) ([][]string, error) {
	var cmds [][]string
	var words []string
	var word strings.Builder
	inWord := false
	endWord := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	endCommand := func() {
		endWord()
		if len(words) > 0 {
			cmds = append(cmds, words)
		}
		words = nil
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			endWord()
		case c == '#' && !inWord:
			endCommand()
			return cmds, nil
		case c == ';' || c == '|' || c == '&':
			if c != ';' && i+1 < len(line) && line[i+1] == c {
				i++
			}
			endCommand()
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("unclosed single quote in %q", line)
			}
			word.WriteString(line[i+1 : i+1+end])
			inWord = true
			i += end + 1
		case c == '"':
			j := i + 1
			for ; j < len(line) && line[j] != '"'; j++ {
				if line[j] == '\\' && j+1 < len(line) {
					j++
				}
				word.WriteByte(line[j])
			}
			if j >= len(line) {
				return nil, fmt.Errorf("unclosed double quote in %q", line)
			}
			inWord = true
			i = j
		case c == '\\' && i+1 < len(line):
			i++
			word.WriteByte(line[i])
			inWord = true
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	endCommand()
	return cmds, nil
}

// checkCommandLine parses args with the real command tree, executing
// nothing: the (sub)command must exist, every flag must be one of its flags
// with a value of the flag's type, and the positional arguments must be as
// many as the command takes.
func checkCommandLine(args []string) error {
	root := newRootCmd()
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if cmd == root {
		return fmt.Errorf("no subcommand in %q", strings.Join(args, " "))
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return fmt.Errorf("%s: %v", cmd.CommandPath(), err)
	}
	if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
		return fmt.Errorf("%s: %v", cmd.CommandPath(), err)
	}
	return nil
}

// docTranscript is a command shown with its output in an untagged block:
// "$ splitguard …" on the first line, what it prints below.
type docTranscript struct {
	docCommand
	output string
}

// transcripts returns the untagged fenced blocks of a page whose first
// line is "$ splitguard …".
func transcripts(file, markdown string) ([]docTranscript, error) {
	var out []docTranscript
	lines := strings.Split(markdown, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```" || i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "$ splitguard ") {
			if strings.HasPrefix(strings.TrimSpace(lines[i]), "```") {
				// skip any other block whole, so that its closing fence is
				// not taken for an opening one
				for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
				}
			}
			continue
		}
		start := i + 2
		cmds, err := splitShellLine(strings.TrimPrefix(lines[i+1], "$ "))
		if err != nil || len(cmds) != 1 {
			return nil, fmt.Errorf("%s:%d: not one command: %q", file, start, lines[i+1])
		}
		var body []string
		for i += 2; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, lines[i])
		}
		out = append(out, docTranscript{docCommand{file, start, cmds[0]}, strings.Join(body, "\n") + "\n"})
	}
	return out, nil
}

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)
	slugDrop  = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// headingAnchors returns the anchors GitHub gives a Markdown page's
// headings: lower case, punctuation dropped, spaces made hyphens (code
// blocks' comment lines are not headings).
func headingAnchors(markdown string) map[string]bool {
	anchors := map[string]bool{}
	inCode := false
	for _, line := range strings.Split(markdown, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inCode = !inCode
			continue
		}
		if m := mdHeading.FindStringSubmatch(line); m != nil && !inCode {
			slug := strings.ReplaceAll(slugDrop.ReplaceAllString(strings.ToLower(m[1]), ""), " ", "-")
			anchors[slug] = true
		}
	}
	return anchors
}

// localLinks returns the targets of a page's links that point into the
// repository (not http:, https: or mailto:).
func localLinks(markdown string) []string {
	var out []string
	for _, m := range mdLink.FindAllStringSubmatch(markdown, -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		out = append(out, target)
	}
	return out
}
