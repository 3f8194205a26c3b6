package main

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// maxReadmeLines bounds the README: what it is, the two commands, a quick
// start, the tools and links; the rest belongs in docs/.
const maxReadmeLines = 300

// markdownDoc is a markdown file of the repository: its headings' anchors,
// its links and its table of contents.
type markdownDoc struct {
	name     string   // relative to the repository's root, with slashes
	anchors  []string // in order, as GitHub makes them
	headings []string // "## Title" lines, level and text
	links    []string // link targets outside code, as written
	contents []string // the anchors the "## Contents" list links to
}

var (
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeSpan   = regexp.MustCompile("`[^`\n]*`")
	contentsTo = regexp.MustCompile(`^\s*- \[[^\]]*\]\(#([^)]+)\)`)
)

// anchor is the fragment GitHub gives a heading: lower case, punctuation
// other than '-' and '_' dropped, spaces made '-'.
func anchor(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func parseMarkdown(t *testing.T, name string) *markdownDoc {
	t.Helper()
	d := &markdownDoc{name: name}
	seen := map[string]int{}
	fenced, inContents := false, false
	for _, line := range strings.Split(readDoc(t, name), "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if m := regexp.MustCompile(`^(#{1,6}) (.+)$`).FindStringSubmatch(line); m != nil {
			a := anchor(m[2])
			if n := seen[a]; n > 0 {
				seen[a]++
				a = fmt.Sprintf("%s-%d", a, n)
			} else {
				seen[a] = 1
			}
			d.anchors = append(d.anchors, a)
			d.headings = append(d.headings, line)
			inContents = line == "## Contents"
			continue
		}
		if inContents {
			if m := contentsTo.FindStringSubmatch(line); m != nil {
				d.contents = append(d.contents, m[1])
			}
		}
		for _, m := range mdLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			d.links = append(d.links, m[1])
		}
	}
	return d
}

func (d *markdownDoc) hasAnchor(a string) bool {
	for _, x := range d.anchors {
		if x == a {
			return true
		}
	}
	return false
}

// docPages lists docs/*.md, with slashes.
func docPages(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs/*.md: %v", err)
	}
	var names []string
	for _, f := range files {
		names = append(names, "docs/"+filepath.Base(f))
	}
	return names
}

// TestReadmeIsShort keeps the README at most maxReadmeLines lines.
func TestReadmeIsShort(t *testing.T) {
	if n := strings.Count(readDoc(t, "README.md"), "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines; at most %d: move the detail into a page of docs/ and link to it", n, maxReadmeLines)
	}
}

// TestDocsContents checks that every page of docs/ has a "## Contents" list
// whose links lead to its headings, and that lists every "##" heading.
func TestDocsContents(t *testing.T) {
	for _, name := range docPages(t) {
		d := parseMarkdown(t, name)
		if len(d.contents) == 0 {
			t.Errorf("%s has no \"## Contents\" list of links to its headings", name)
			continue
		}
		listed := map[string]bool{}
		for _, a := range d.contents {
			listed[a] = true
			if !d.hasAnchor(a) {
				t.Errorf("%s: its Contents link to #%s, which no heading of the page makes", name, a)
			}
		}
		for i, h := range d.headings {
			if strings.HasPrefix(h, "## ") && h != "## Contents" && !listed[d.anchors[i]] {
				t.Errorf("%s: the heading %q is not in its Contents (want a line \"- [%s](#%s)\")", name, h, h[3:], d.anchors[i])
			}
		}
	}
}

// TestDocsLinks checks every relative link of the README, of docs/ and of
// the examples' READMEs: the file exists and, for a markdown file, the
// fragment names a heading.
func TestDocsLinks(t *testing.T) {
	docs := map[string]*markdownDoc{}
	get := func(name string) *markdownDoc {
		if docs[name] == nil {
			docs[name] = parseMarkdown(t, name)
		}
		return docs[name]
	}
	examples, err := filepath.Glob(filepath.Join("..", "..", "examples", "*", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := append([]string{"README.md"}, docPages(t)...)
	for _, f := range examples {
		rel, _ := filepath.Rel(filepath.Join("..", ".."), f)
		names = append(names, filepath.ToSlash(rel))
	}
	for _, name := range names {
		for _, link := range get(name).links {
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			target, frag, _ := strings.Cut(link, "#")
			file := name
			if target != "" {
				file = path.Join(path.Dir(name), target)
				if strings.HasPrefix(file, "../") {
					t.Errorf("%s: the link %q leaves the repository", name, link)
					continue
				}
				if _, err := os.Stat(filepath.Join("..", "..", filepath.FromSlash(file))); err != nil {
					t.Errorf("%s: the link %q leads to no file: %v", name, link, err)
					continue
				}
			}
			if frag != "" {
				if !strings.HasSuffix(file, ".md") {
					t.Errorf("%s: the link %q has a fragment into a file that is not markdown", name, link)
				} else if !get(file).hasAnchor(frag) {
					t.Errorf("%s: the link %q names no heading of %s", name, link, file)
				}
			}
		}
	}
}
