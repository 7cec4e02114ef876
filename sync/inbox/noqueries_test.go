package inbox

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// queryMethods are the *gorm.DB methods that build or run a query. The
// check goes by name: no other type the inbox calls has methods so named.
var queryMethods = map[string]bool{
	"Model": true, "Table": true, "Where": true, "Or": true, "Not": true, "Raw": true, "Exec": true,
	"Find": true, "Take": true, "First": true, "Last": true, "Scan": true, "Pluck": true, "Count": true,
	"Create": true, "CreateInBatches": true, "Save": true, "Update": true, "Updates": true,
	"UpdateColumn": true, "UpdateColumns": true, "Delete": true, "Clauses": true, "Select": true,
	"Joins": true, "Order": true, "Group": true, "Limit": true, "FirstOrCreate": true,
}

// The inbox's queries live in models ("the queries over them", README's
// layout), next to the guards they carry: the package itself only opens the
// transaction and calls them. A call through an imported package's name,
// such as models.LinkByID or cmp.Or, is no method of a *gorm.DB.
func TestTheInboxHasNoQueryOfItsOwn(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var found []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		imported := importNames(f)
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && queryMethods[sel.Sel.Name] {
				if pkg, ok := sel.X.(*ast.Ident); !ok || !imported[pkg.Name] {
					found = append(found, fset.Position(call.Pos()).String()+": ."+sel.Sel.Name)
				}
			}
			return true
		})
	}
	require.Empty(t, found, "queries built in sync/inbox: move them into a named function in models")
}

// importNames are the names a file's imports are called by in it.
func importNames(f *ast.File) map[string]bool {
	names := map[string]bool{}
	for _, imp := range f.Imports {
		path := strings.Trim(imp.Path.Value, `"`)
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = true
	}
	return names
}
