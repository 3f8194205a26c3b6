package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// maxLogMessage is the longest log message the project writes: a message is
// a short phrase, and its details go in attributes.
const maxLogMessage = 89

// sourceDirs parses the non-test Go files of the module, by directory,
// skipping testdata, node_modules and hidden directories.
func sourceDirs(t *testing.T, mode parser.Mode) (*token.FileSet, map[string][]*ast.File) {
	t.Helper()
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	dirs := map[string][]*ast.File{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, mode)
		if err != nil {
			return err
		}
		dirs[filepath.Dir(path)] = append(dirs[filepath.Dir(path)], f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fset, dirs
}

// TestPackageDocs checks that every package has a doc comment and that a
// library package's starts with "Package <its name>".
func TestPackageDocs(t *testing.T) {
	_, dirs := sourceDirs(t, parser.PackageClauseOnly|parser.ParseComments)
	for dir, files := range dirs {
		name := files[0].Name.Name
		var docs []string
		for _, f := range files {
			if f.Doc != nil {
				docs = append(docs, f.Doc.Text())
			}
		}
		switch {
		case len(docs) == 0:
			t.Errorf("%s: package %s has no doc comment", dir, name)
		case name != "main":
			for _, d := range docs {
				if !strings.HasPrefix(d, "Package "+name+" ") {
					t.Errorf("%s: the doc comment of package %s starts %q; want \"Package %s ...\"", dir, name, strings.SplitN(d, "\n", 2)[0], name)
				}
			}
		}
	}
}

// TestLogMessagesAreShort checks that no slog call's message literal reads
// as an essay.
func TestLogMessagesAreShort(t *testing.T) {
	fset, dirs := sourceDirs(t, 0)
	msgArg := map[string]int{"Debug": 0, "Info": 0, "Warn": 0, "Error": 0,
		"DebugContext": 1, "InfoContext": 1, "WarnContext": 1, "ErrorContext": 1, "Log": 2, "LogAttrs": 2}
	for _, files := range dirs {
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				i, ok := msgArg[sel.Sel.Name]
				if !ok || len(call.Args) <= i {
					return true
				}
				if msg, ok := literal(call.Args[i]); ok && len(msg) > maxLogMessage {
					t.Errorf("%s: log message of %d characters (at most %d; move the details to attributes): %q",
						fset.Position(call.Pos()), len(msg), maxLogMessage, msg)
				}
				return true
			})
		}
	}
}

// literal returns the value of a string literal, or of a concatenation of
// them.
func literal(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			s, err := strconv.Unquote(e.Value)
			return s, err == nil
		}
	case *ast.BinaryExpr:
		x, ok1 := literal(e.X)
		y, ok2 := literal(e.Y)
		return x + y, ok1 && ok2 && e.Op == token.ADD
	case *ast.ParenExpr:
		return literal(e.X)
	}
	return "", false
}
