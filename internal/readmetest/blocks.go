package readmetest

import (
	"errors"
	"fmt"
	"strings"
)

// markerPrefix starts every walk marker (an HTML comment).
const markerPrefix = "<!-- readme-walk:"

// ErrMarker is a walk marker ParseBlocks cannot use: unknown, malformed,
// or before no sh block.
var ErrMarker = errors.New("readmetest: bad readme-walk marker")

// Block is one sh block of the README.
type Block struct {
	Line int    // the line of its opening fence, 1-based
	Body string // its lines, each ending in a newline
	// Skip is the reason a skip marker gives; "" runs the block.
	Skip string
	// CheckTrace is the span a check-trace marker names; "" checks none.
	CheckTrace string
	// Needs is the absolute path a needs marker names: the block runs
	// where it exists and is skipped, saying so, where it does not.
	Needs string
}

// ParseBlocks returns the sh blocks of a Markdown text (fences ```sh),
// with the markers before them. Fences of other languages are passed over.
func ParseBlocks(md string) ([]Block, error) {
	lines := strings.Split(md, "\n")
	var (
		blocks  []Block
		pending *Block // a marker read, waiting for its block
		pendAt  int
	)
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		switch {
		case strings.HasPrefix(line, markerPrefix):
			if pending != nil {
				return nil, fmt.Errorf("%w: line %d: a second marker before the block of line %d's", ErrMarker, i+1, pendAt)
			}
			b, err := parseMarker(line)
			if err != nil {
				return nil, fmt.Errorf("%w: line %d: %v", ErrMarker, i+1, err)
			}
			pending, pendAt = &b, i+1
		case strings.HasPrefix(line, "```"):
			lang := strings.TrimSpace(strings.TrimPrefix(line, "```"))
			start := i
			var body strings.Builder
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
				body.WriteString(lines[i] + "\n")
			}
			if i == len(lines) {
				return nil, fmt.Errorf("readmetest: line %d: the block never closes", start+1)
			}
			if lang != "sh" {
				if pending != nil {
					return nil, fmt.Errorf("%w: line %d: the marker of line %d stands before a %q block, not an sh one", ErrMarker, start+1, pendAt, lang)
				}
				continue
			}
			b := Block{Line: start + 1, Body: body.String()}
			if pending != nil {
				b.Skip, b.CheckTrace, b.Needs = pending.Skip, pending.CheckTrace, pending.Needs
				pending = nil
			}
			blocks = append(blocks, b)
		case line != "" && pending != nil:
			return nil, fmt.Errorf("%w: line %d: the marker stands before text, not a block", ErrMarker, pendAt)
		}
	}
	if pending != nil {
		return nil, fmt.Errorf("%w: line %d: the marker stands before no block", ErrMarker, pendAt)
	}
	return blocks, nil
}

// parseMarker reads "<!-- readme-walk: skip (REASON) -->",
// "<!-- readme-walk: check-trace SPAN -->" or
// "<!-- readme-walk: needs /ABSOLUTE/PATH -->".
func parseMarker(line string) (Block, error) {
	rest, ok := strings.CutSuffix(strings.TrimPrefix(line, markerPrefix), "-->")
	if !ok {
		return Block{}, fmt.Errorf("%q does not end in -->", line)
	}
	verb, arg, _ := strings.Cut(strings.TrimSpace(rest), " ")
	arg = strings.TrimSpace(arg)
	switch verb {
	case "skip":
		reason, open := strings.CutPrefix(arg, "(")
		reason, closed := strings.CutSuffix(reason, ")")
		if !open || !closed || strings.TrimSpace(reason) == "" {
			return Block{}, fmt.Errorf("%q: skip needs a reason in parentheses: skip (runs forever)", line)
		}
		return Block{Skip: reason}, nil
	case "check-trace":
		if arg == "" || strings.ContainsAny(arg, " \t") {
			return Block{}, fmt.Errorf("%q: check-trace needs one span name", line)
		}
		return Block{CheckTrace: arg}, nil
	case "needs":
		if !strings.HasPrefix(arg, "/") || strings.ContainsAny(arg, " \t") {
			return Block{}, fmt.Errorf("%q: needs takes one absolute path: needs /dev/fuse", line)
		}
		return Block{Needs: arg}, nil
	}
	return Block{}, fmt.Errorf("%q: want skip (REASON), check-trace SPAN or needs PATH", line)
}
