package num

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// unitAfterVerb is a format verb written straight before a time unit
// ("%.1f s", "%gms", "%ds"): a duration formatted by hand.
var unitAfterVerb = regexp.MustCompile(`%[-+# 0-9.*]*[vdfegs] ?(ms|µs|us|ns|s|sec|min|h)\b`)

// bareUnit is a literal that only appends a unit to a number printed
// elsewhere (x + " ms").
var bareUnit = regexp.MustCompile(`^ ?(ms|µs|us|ns|s|sec|min|h)$`)

// machineText are the durations written for a program, not a person,
// by file and literal: Grafana's range_input URL parameter ("300s").
var machineText = map[[2]string]bool{
	{filepath.Join("..", "analysis", "links.go"), "s"}: true,
}

// TestNoOtherDurationFormatter walks the reports packages' Go files
// outside num and fails on a duration written by hand: a format verb
// followed by a unit, a unit literal appended with +, or a
// time.Duration rounded for printing (Duration.String's "4.25s"). Every
// duration's text is Sec or Ms, so the next formatter cannot creep back.
func TestNoOtherDurationFormatter(t *testing.T) {
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "num") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BinaryExpr:
				for _, side := range []ast.Expr{n.X, n.Y} {
					if s, ok := strLit(side); ok && n.Op == token.ADD && bareUnit.MatchString(s) && !machineText[[2]string{path, s}] {
						t.Errorf("%s: unit %q appended by hand; use num.Sec or num.Ms", fset.Position(side.Pos()), s)
					}
				}
			case *ast.BasicLit:
				if s, ok := strLit(n); ok && unitAfterVerb.MatchString(s) {
					t.Errorf("%s: %q formats a duration by hand; use num.Sec or num.Ms", fset.Position(n.Pos()), s)
				}
			case *ast.CallExpr:
				if isPrint(n) {
					for _, a := range n.Args {
						if roundsDuration(a) {
							t.Errorf("%s: a time.Duration printed as Go writes it; use num.Sec", fset.Position(a.Pos()))
						}
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 20 {
		t.Fatalf("walked %d Go files: not the reports tree", files)
	}
}

func strLit(e ast.Expr) (string, bool) {
	l, ok := e.(*ast.BasicLit)
	if !ok || l.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(l.Value)
	return s, err == nil
}

// isPrint is a call of fmt's printing functions.
func isPrint(c *ast.CallExpr) bool {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "fmt" && strings.Contains(sel.Sel.Name, "print")
}

// roundsDuration is x.Round(time.Unit) or x.Truncate(time.Unit), maybe
// with .String(): a duration about to be printed in Go's form.
func roundsDuration(e ast.Expr) bool {
	c, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	if sel.Sel.Name == "String" {
		return roundsDuration(sel.X)
	}
	if (sel.Sel.Name != "Round" && sel.Sel.Name != "Truncate") || len(c.Args) != 1 {
		return false
	}
	arg, ok := c.Args[0].(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := arg.X.(*ast.Ident)
	return ok && pkg.Name == "time"
}
