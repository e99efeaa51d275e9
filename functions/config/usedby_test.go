package config_test

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shardcount/counters/functions/config"
)

// TestUsedByNamesTheEntryPointsThatReadEachSetting: each setting's usedBy (docs/settings.md's "Used
// by") names exactly the entry points that read it, as derived from the source of package
// functions and of the module's packages it imports. An entry point reads a setting when the code
// it runs once the Service is built (the value package functions registers under its name, and
// all it may call) reads the Config field, or a field that the code building the Service stored a
// value derived from it in (the fields of one instance of a generic type apart; errors aside). A
// failure logs the fields each unlisted read went through.
func TestUsedByNamesTheEntryPointsThatReadEachSetting(t *testing.T) {
	derived := loadFlow(t).settingsReadByEntry(t)
	entries := slices.Sorted(maps.Keys(derived))
	for _, s := range config.Settings() {
		var want, got []string
		for _, e := range entries {
			if chain, ok := derived[e][s.Field]; ok {
				got = append(got, e)
				if !slices.Contains(s.UsedBy, e) && !slices.Equal(s.UsedBy, []string{"*"}) {
					t.Logf("%s reads %s through %s", e, s.Name, strings.Join(chain, " <- "))
				}
			}
		}
		want = s.UsedBy
		if slices.Equal(want, []string{"*"}) {
			want = entries
		}
		if !slices.Equal(slices.Sorted(slices.Values(want)), got) {
			t.Errorf("%s: usedBy says %s; the code of %s reads it", s.Name, strings.Join(s.UsedBy, ","), strings.Join(got, ","))
		}
	}
}

// node is where a value may be held: a *types.Var (a variable, parameter or struct field, which
// stands for that field of every value of its type), a result, or a function as a value.
type (
	result struct {
		fn any // *types.Func or *ast.FuncLit
		i  int
	}
	dynResult struct {
		call *ast.CallExpr
		i    int
	}
	fnRef struct{ fn any }
	// field is a struct field of every value of its type: of one instance of a generic type.
	field struct {
		v     *types.Var // the generic field for an instance
		targs string
		error bool // a field of an error type: it describes a failure
	}
	// read is a field read: of the field v of recv's type.
	read struct {
		v    *types.Var
		recv types.Type
	}
	// instance is a call of a generic function or method: its type parameters are targs.
	instance struct {
		callee  any
		tparams *types.TypeParamList
		targs   *types.TypeList
	}
)

// flow is a flow-insensitive, field-based analysis of the module's code that functions depends on.
type flow struct {
	units   map[any]*unit        // *types.Func or *ast.FuncLit: its body
	to      map[any][]any        // node -> the nodes its values flow into
	labels  map[any]map[any]bool // node -> the functions it may hold
	cur     *unit                // whose flows edge records
	methods map[string][]*types.Func
	pkgs    map[string]*pkgSource
	entries map[string]*unit // entry point name -> the value registered for it
}

// unit is a function body (or an entry point's registered expression) with what it calls and reads.
type unit struct {
	pkg      *pkgSource
	body     ast.Node
	calls    map[any]bool // units it may call or refers to
	direct   map[any]bool // units it calls
	reads    map[read]bool
	inst     []instance
	dynamic  []*ast.CallExpr // calls of function values held in variables or fields
	edges    [][2]any        // its flows
	implicit [][2]any        // from its conditions to what is set under them
	external []any           // what it gives code outside the module
}

type pkgSource struct {
	info  *types.Info
	files []*ast.File
	types *types.Package
}

// loadFlow type-checks the module's packages that functions depends on, from source (the others
// from export data), and computes the flows between their nodes.
func loadFlow(t *testing.T) *flow {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-export", "-json=ImportPath,Dir,GoFiles,Export,Module", "github.com/shardcount/counters/functions")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	type listed struct {
		ImportPath, Dir, Export string
		GoFiles                 []string
		Module                  *struct{ Path string }
	}
	exports := map[string]string{}
	var ours []listed
	for dec := json.NewDecoder(strings.NewReader(string(out))); dec.More(); {
		var p listed
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
		if p.Module != nil && p.Module.Path == "github.com/shardcount/counters" {
			ours = append(ours, p) // in dependency order
		}
	}
	fset := token.NewFileSet()
	f := &flow{units: map[any]*unit{}, to: map[any][]any{}, labels: map[any]map[any]bool{},
		methods: map[string][]*types.Func{}, pkgs: map[string]*pkgSource{}, entries: map[string]*unit{}}
	gc := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) { return os.Open(exports[path]) })
	imp := importerFunc(func(path string) (*types.Package, error) {
		if p := f.pkgs[path]; p != nil {
			return p.types, nil
		}
		return gc.Import(path)
	})
	for _, p := range ours {
		src := &pkgSource{info: &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Defs: map[*ast.Ident]types.Object{},
			Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}, Instances: map[*ast.Ident]types.Instance{}}}
		for _, name := range p.GoFiles {
			file, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			src.files = append(src.files, file)
		}
		if src.types, err = (&types.Config{Importer: imp}).Check(p.ImportPath, fset, src.files, src.info); err != nil {
			t.Fatalf("type-check %s: %v", p.ImportPath, err)
		}
		f.pkgs[p.ImportPath] = src
	}
	f.index()
	f.solve()
	return f
}

type importerFunc func(path string) (*types.Package, error)

func (i importerFunc) Import(path string) (*types.Package, error) { return i(path) }

// index makes a unit of every function body, and of each entry point's registered value (the
// values of package functions' map keyed by the entry point names), then walks them.
func (f *flow) index() {
	for _, p := range f.pkgs {
		for _, file := range p.files {
			for _, d := range file.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
					fn := p.info.Defs[fd.Name].(*types.Func)
					f.units[fn] = &unit{pkg: p, body: fd}
					if sig := fn.Signature(); sig.Recv() != nil {
						f.methods[fn.Name()] = append(f.methods[fn.Name()], fn)
					}
				}
			}
			ast.Inspect(file, func(n ast.Node) bool {
				if lit, ok := n.(*ast.FuncLit); ok {
					f.units[lit] = &unit{pkg: p, body: lit}
				}
				return true
			})
		}
	}
	functions := f.pkgs["github.com/shardcount/counters/functions"]
	for _, file := range functions.files {
		ast.Inspect(file, func(n ast.Node) bool {
			kv, ok := n.(*ast.KeyValueExpr)
			if !ok {
				return true
			}
			if c := functions.info.Types[kv.Key].Value; c != nil && functions.types.Scope().Lookup("Entry"+strings.Trim(c.ExactString(), `"`)) != nil {
				u := &unit{pkg: functions, body: kv.Value}
				f.entries[strings.Trim(c.ExactString(), `"`)] = u
				f.units[kv] = u
			}
			return true
		})
	}
	for key, u := range f.units {
		f.cur = u
		f.walk(key, u)
	}
}

// walk records u's calls, references, field reads and the flows of its statements.
func (f *flow) walk(key any, u *unit) {
	u.calls, u.direct, u.reads = map[any]bool{}, map[any]bool{}, map[read]bool{}
	info := u.pkg.info
	var sig *types.Signature
	switch b := u.body.(type) {
	case *ast.FuncDecl:
		sig = info.Defs[b.Name].(*types.Func).Signature()
	case *ast.FuncLit:
		sig = info.Types[b].Type.(*types.Signature)
	}
	if sig != nil {
		for i := range sig.Results().Len() {
			if v := sig.Results().At(i); v.Name() != "" {
				f.edge(v, result{key, i})
			}
		}
	}
	inner := map[*ast.SelectorExpr]bool{}
	ast.Inspect(u.body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			if n != u.body {
				u.calls[n] = true
				return false
			}
		case *ast.Ident:
			if fn, ok := info.Uses[n].(*types.Func); ok && f.units[fn.Origin()] != nil {
				u.calls[fn.Origin()] = true
				origin := fn.Origin().Signature()
				if inst, ok := info.Instances[n]; ok {
					u.inst = append(u.inst, instance{fn.Origin(), origin.TypeParams(), inst.TypeArgs})
				} else if recv := fn.Signature().Recv(); recv != nil && origin.RecvTypeParams().Len() > 0 {
					u.inst = append(u.inst, instance{fn.Origin(), origin.RecvTypeParams(), named(recv.Type()).TypeArgs()})
				}
			}
		case *ast.SelectorExpr:
			// A read is of the field last selected: s.cfg.MaxDelta reads MaxDelta.
			if x, ok := ast.Unparen(n.X).(*ast.SelectorExpr); ok && info.Selections[n] != nil && info.Selections[n].Kind() == types.FieldVal {
				inner[x] = true
			}
			if s := info.Selections[n]; s != nil && s.Kind() == types.FieldVal && !isConfigMethod(key) && !inner[n] {
				u.reads[read{s.Obj().(*types.Var).Origin(), s.Recv()}] = true
			}
		case *ast.IfStmt, *ast.SwitchStmt:
			// What is set under a condition depends on what the condition reads.
			var cond []any
			switch n := n.(type) {
			case *ast.IfStmt:
				cond = f.sources(info, n.Cond)
			case *ast.SwitchStmt:
				if n.Tag != nil {
					cond = f.sources(info, n.Tag)
				}
				for _, c := range n.Body.List {
					cond = append(cond, f.sourcesOf(info, c.(*ast.CaseClause).List)...)
				}
			}
			ast.Inspect(n, func(m ast.Node) bool {
				switch m := m.(type) {
				case *ast.FuncLit:
					return false
				case *ast.AssignStmt:
					for _, lhs := range m.Lhs {
						for _, src := range cond {
							u.implicit = append(u.implicit, [2]any{src, f.target(info, lhs)})
						}
					}
				case *ast.ReturnStmt:
					if len(m.Results) > 1 && !info.Types[m.Results[len(m.Results)-1]].IsNil() {
						return true // a failure builds nothing
					}
					for i := range m.Results {
						for _, src := range cond {
							u.implicit = append(u.implicit, [2]any{src, result{key, i}})
						}
					}
				}
				return true
			})
		case *ast.AssignStmt:
			for i, lhs := range n.Lhs {
				srcs := f.sourcesAt(info, n.Rhs, i)
				if ix, ok := ast.Unparen(lhs).(*ast.IndexExpr); ok {
					srcs = append(srcs, f.sources(info, ix.Index)...) // a map's keys
				}
				for _, src := range srcs {
					f.edge(src, f.target(info, lhs))
				}
			}
		case *ast.ValueSpec:
			for i, name := range n.Names {
				if len(n.Values) > 0 {
					for _, src := range f.sourcesAt(info, n.Values, i) {
						f.edge(src, info.Defs[name])
					}
				}
			}
		case *ast.RangeStmt:
			for _, v := range []ast.Expr{n.Key, n.Value} {
				if v != nil {
					for _, src := range f.sources(info, n.X) {
						f.edge(src, f.target(info, v))
					}
				}
			}
		case *ast.SendStmt:
			for _, src := range f.sources(info, n.Value) {
				f.edge(src, f.target(info, n.Chan))
			}
		case *ast.ReturnStmt:
			for i := range max(len(n.Results), sig.Results().Len()) {
				if len(n.Results) > 0 {
					for _, src := range f.sourcesAt(info, n.Results, i) {
						f.edge(src, result{key, i})
					}
				}
			}
		case *ast.CompositeLit:
			if st, ok := info.Types[n].Type.Underlying().(*types.Struct); ok {
				for i, elt := range n.Elts {
					v := st.Field(i)
					if kv, ok := elt.(*ast.KeyValueExpr); ok {
						v, elt = info.Uses[kv.Key.(*ast.Ident)].(*types.Var), kv.Value
					}
					for _, src := range f.sources(info, elt) {
						f.edge(src, fieldOf(v, info.Types[n].Type, nil))
					}
				}
			}
		case *ast.CallExpr:
			targets, dynamic := f.callees(info, n)
			if dynamic {
				u.dynamic = append(u.dynamic, n)
			}
			for _, fn := range targets {
				f.call(info, n, fn)
				u.direct[fn], u.calls[fn] = true, true
			}
			if tv := info.Types[n.Fun]; len(targets) == 0 && !dynamic && !tv.IsType() && !tv.IsBuiltin() {
				// Outside the module: it may call the functions and methods it is given back, and
				// write what it is given into what its pointer arguments point to (json.Unmarshal).
				var given []any
				if sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr); ok && info.Selections[sel] != nil {
					given = f.sources(info, sel.X)
				}
				given = append(given, f.sourcesOf(info, n.Args)...)
				u.external = append(u.external, given...)
				for _, arg := range n.Args {
					if addr, ok := ast.Unparen(arg).(*ast.UnaryExpr); ok && addr.Op == token.AND {
						for _, src := range given {
							f.edge(src, f.target(info, addr.X))
						}
					}
				}
			}
		}
		return true
	})
}

// call makes the arguments of call flow into fn's parameters.
func (f *flow) call(info *types.Info, call *ast.CallExpr, fn *types.Func) {
	sig := fn.Signature()
	if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && sig.Recv() != nil {
		for _, src := range f.sources(info, sel.X) {
			f.edge(src, sig.Recv())
		}
	}
	for i, arg := range call.Args {
		if sig.Params().Len() == 0 {
			break
		}
		for _, src := range f.sources(info, arg) {
			f.edge(src, sig.Params().At(min(i, sig.Params().Len()-1)))
		}
	}
}

// callees are the module functions call may run: its static callee, or every module method that
// an interface method call may reach; dynamic says it calls a function value held in a variable
// or field, resolved by solve.
func (f *flow) callees(info *types.Info, call *ast.CallExpr) (targets []*types.Func, dynamic bool) {
	fun := ast.Unparen(call.Fun)
	if ix, ok := fun.(*ast.IndexExpr); ok {
		fun = ix.X
	}
	if tv := info.Types[fun]; tv.IsType() || tv.IsBuiltin() {
		return nil, false
	}
	var obj types.Object
	switch fn := fun.(type) {
	case *ast.Ident:
		obj = info.Uses[fn]
	case *ast.SelectorExpr:
		obj = info.Uses[fn.Sel]
		if s := info.Selections[fn]; s != nil && types.IsInterface(s.Recv()) && s.Kind() == types.MethodVal {
			for _, m := range f.methods[fn.Sel.Name] {
				if recv := m.Signature().Recv().Type(); types.Implements(recv, s.Recv().Underlying().(*types.Interface)) ||
					types.Implements(types.NewPointer(recv), s.Recv().Underlying().(*types.Interface)) {
					targets = append(targets, m)
				}
			}
			return targets, false
		}
	case *ast.FuncLit:
		return nil, false
	}
	switch o := obj.(type) {
	case *types.Func:
		if f.units[o.Origin()] != nil {
			return []*types.Func{o.Origin()}, false
		}
		return nil, false
	case *types.Var:
		// A parameter holds what its caller passed, which that caller refers to itself.
		return nil, !isParam(o)
	}
	return nil, false
}

func isParam(v *types.Var) bool {
	return v.Kind() == types.ParamVar || v.Kind() == types.RecvVar
}

// sourcesAt are the sources of the i-th value of exprs: of exprs[i], or of the i-th result of
// the one call exprs holds.
func (f *flow) sourcesAt(info *types.Info, exprs []ast.Expr, i int) []any {
	if len(exprs) > 1 {
		return f.sources(info, exprs[i])
	}
	if i == 0 {
		return f.sources(info, exprs[0])
	}
	if call, ok := ast.Unparen(exprs[0]).(*ast.CallExpr); ok {
		return f.callSources(info, call, i)
	}
	return nil // the ok of a comma-ok expression
}

// sources are the nodes whose values the value of expr may hold.
func (f *flow) sources(info *types.Info, expr ast.Expr) []any {
	switch e := ast.Unparen(expr).(type) {
	case *ast.Ident:
		switch o := info.Uses[e].(type) {
		case *types.Var:
			return []any{o.Origin()}
		case *types.Func:
			return []any{fnRef{o.Origin()}}
		}
	case *ast.FuncLit:
		return []any{fnRef{e}}
	case *ast.SelectorExpr:
		if s := info.Selections[e]; s != nil {
			switch s.Kind() {
			case types.FieldVal:
				return []any{fieldOf(s.Obj().(*types.Var), s.Recv(), nil)}
			default:
				return []any{fnRef{s.Obj().(*types.Func).Origin()}}
			}
		}
		return f.sources(info, e.Sel) // a qualified identifier
	case *ast.CallExpr:
		return f.callSources(info, e, 0)
	case *ast.UnaryExpr:
		return f.sources(info, e.X)
	case *ast.StarExpr:
		return f.sources(info, e.X)
	case *ast.BinaryExpr:
		return append(f.sources(info, e.X), f.sources(info, e.Y)...)
	case *ast.IndexExpr:
		return append(f.sources(info, e.X), f.sources(info, e.Index)...)
	case *ast.SliceExpr:
		return f.sources(info, e.X)
	case *ast.TypeAssertExpr:
		return f.sources(info, e.X)
	case *ast.CompositeLit:
		if _, ok := info.Types[e].Type.Underlying().(*types.Struct); ok {
			n := named(info.Types[e].Type)
			if n != nil && n.Obj().Pkg() != nil && f.pkgs[n.Obj().Pkg().Path()] != nil {
				return []any{methodsOf{n}}
			}
			// Code outside the module reads fields this analysis does not see: the value holds
			// what it is made of.
		}
		{
			var srcs []any
			for _, elt := range e.Elts {
				if kv, ok := elt.(*ast.KeyValueExpr); ok {
					srcs = append(srcs, f.sources(info, kv.Key)...)
					elt = kv.Value
				}
				srcs = append(srcs, f.sources(info, elt)...)
			}
			return srcs
		}
	}
	return nil
}

// callSources are the sources of the i-th result of call.
func (f *flow) callSources(info *types.Info, call *ast.CallExpr, i int) []any {
	if tv := info.Types[call.Fun]; tv.IsType() || tv.IsBuiltin() {
		return f.sourcesOf(info, call.Args)
	}
	targets, dynamic := f.callees(info, call)
	var srcs []any
	for _, fn := range targets {
		srcs = append(srcs, result{fn, i})
	}
	if dynamic {
		srcs = append(srcs, dynResult{call, i})
	}
	if len(targets) == 0 && !dynamic {
		// Outside the module: its result may hold its arguments and receiver.
		srcs = append(srcs, f.sourcesOf(info, call.Args)...)
		if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && info.Selections[sel] != nil {
			srcs = append(srcs, f.sources(info, sel.X)...)
		}
	}
	return srcs
}

func (f *flow) sourcesOf(info *types.Info, exprs []ast.Expr) []any {
	var srcs []any
	for _, e := range exprs {
		srcs = append(srcs, f.sources(info, e)...)
	}
	return srcs
}

// target is the node an assignment to lhs writes: the variable, the field, or what is indexed.
func (f *flow) target(info *types.Info, lhs ast.Expr) any {
	switch e := ast.Unparen(lhs).(type) {
	case *ast.Ident:
		if o := info.Defs[e]; o != nil {
			return o
		}
		if v, ok := info.Uses[e].(*types.Var); ok {
			return v.Origin()
		}
	case *ast.SelectorExpr:
		if s := info.Selections[e]; s != nil && s.Kind() == types.FieldVal {
			return fieldOf(s.Obj().(*types.Var), s.Recv(), nil)
		}
	case *ast.IndexExpr:
		return f.target(info, e.X)
	case *ast.StarExpr:
		return f.target(info, e.X)
	}
	return nil // the blank identifier
}

// fieldOf is the node of field v of a value of type recv, whose type parameters are subst's.
func fieldOf(v *types.Var, recv types.Type, subst map[*types.TypeParam]string) field {
	var targs []string
	if n := named(recv); n != nil {
		for t := range n.TypeArgs().Types() {
			if tp, ok := t.(*types.TypeParam); ok && subst[tp] != "" {
				targs = append(targs, subst[tp])
			} else {
				targs = append(targs, types.TypeString(t, nil))
			}
		}
	}
	isError := recv != nil && (types.Implements(recv, errorType) || types.Implements(types.NewPointer(recv), errorType))
	return field{v.Origin(), strings.Join(targs, ","), isError}
}

// named is t's named type, through a pointer; or nil.
func named(t types.Type) *types.Named {
	if p, ok := t.Underlying().(*types.Pointer); ok {
		t = p.Elem()
	}
	n, _ := types.Unalias(t).(*types.Named)
	return n
}

// methodsOf stands for the methods of a struct type a composite literal makes.
type methodsOf struct{ t *types.Named }

// isConfigMethod says whether key is a method of config.Config, which derives values from its
// fields: a read is where the derived values are read.
func isConfigMethod(key any) bool {
	fn, ok := key.(*types.Func)
	if !ok || fn.Signature().Recv() == nil {
		return false
	}
	n := named(fn.Signature().Recv().Type())
	return n != nil && n.Obj().Name() == "Config" && n.Obj().Pkg().Path() == "github.com/shardcount/counters/functions/config"
}

func (f *flow) edge(from, to any) {
	if from != nil && to != nil {
		f.to[from] = append(f.to[from], to)
		f.cur.edges = append(f.cur.edges, [2]any{from, to})
	}
}

// spread gives node the label l and passes it on along the flows of next; why records where each
// label came from.
func spread(next map[any][]any, labels map[any]map[any]bool, why map[[2]any]any, node, l any) bool {
	if labels[node][l] {
		return false
	}
	if labels[node] == nil {
		labels[node] = map[any]bool{}
	}
	labels[node][l] = true
	for _, n := range next[node] {
		if !labels[n][l] {
			why[[2]any{n, l}] = node
			spread(next, labels, why, n, l)
		}
	}
	return true
}

// solve labels each node with the functions and methods it may hold, and resolves the calls of
// function values, and of methods that code outside the module is handed, until no more appear.
func (f *flow) solve() {
	why := map[[2]any]any{}
	for key := range f.units {
		spread(f.to, f.labels, why, fnRef{key}, key)
	}
	for node := range f.to {
		if m, ok := node.(methodsOf); ok && m.t != nil {
			for _, t := range []types.Type{m.t, types.NewPointer(m.t)} {
				ms := types.NewMethodSet(t)
				for i := range ms.Len() {
					if fn := ms.At(i).Obj().(*types.Func).Origin(); f.units[fn] != nil {
						spread(f.to, f.labels, why, node, fn)
					}
				}
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for _, u := range f.units {
			f.cur = u
			for _, src := range u.external {
				for fn := range f.labels[src] {
					// Functions handed on are called where they are referred to; methods of the
					// values handed on may be called back.
					if m, ok := fn.(*types.Func); ok && m.Signature().Recv() != nil && !u.calls[fn] {
						u.calls[fn], changed = true, true
					}
				}
			}
			for _, call := range u.dynamic {
				for _, src := range f.sources(u.pkg.info, call.Fun) {
					for fn := range f.labels[src] {
						if u.calls[fn] {
							continue
						}
						u.calls[fn], changed = true, true
						if tf, ok := fn.(*types.Func); ok {
							f.call(u.pkg.info, call, tf)
						}
						results := 1
						if tuple, ok := u.pkg.info.Types[call].Type.(*types.Tuple); ok {
							results = tuple.Len()
						}
						for i := range results {
							f.edge(result{fn, i}, dynResult{call, i})
						}
					}
				}
			}
		}
		// Flows added since a node was labelled carry its labels on.
		for node, ls := range f.labels {
			for l := range ls {
				for _, next := range f.to[node] {
					changed = spread(f.to, f.labels, why, next, l) || changed
				}
			}
		}
	}
}

// settingsReadByEntry returns, per entry point, the Config fields whose values the code it runs
// reads, each with the chain of fields it reached the read through. The values flow along what
// the code that builds the dependencies runs (what config.Load's callers call, not the functions
// they hand on), Config's methods, and the code of that entry point; not into error values.
func (f *flow) settingsReadByEntry(t *testing.T) map[string]map[string][]string {
	if len(f.entries) == 0 {
		t.Fatal("no map of package functions is keyed by the entry point names")
	}
	load := f.pkgs["github.com/shardcount/counters/functions/config"].types.Scope().Lookup("Load")
	building := map[*unit]bool{}
	var build func(u *unit)
	build = func(u *unit) {
		if u != nil && !building[u] {
			building[u] = true
			for callee := range u.direct {
				build(f.units[callee])
			}
		}
	}
	for key, u := range f.units {
		if u.calls[load] || isConfigMethod(key) {
			build(u)
		}
	}
	config := load.Pkg().Scope().Lookup("Config").Type()
	out := map[string]map[string][]string{}
	for name, root := range f.entries {
		out[name] = map[string][]string{}
		next := map[any][]any{}
		for u := range building {
			for _, e := range append(u.edges, u.implicit...) {
				if e[1] != nil {
					next[e[0]] = append(next[e[0]], e[1])
				}
			}
		}
		for from, to := range next {
			// Errors describe failures; a whole Config is read field by field.
			next[from] = slices.DeleteFunc(to, func(n any) bool {
				switch n := n.(type) {
				case field:
					return n.error || isError(n.v.Type()) || types.Identical(n.v.Type(), config)
				case *types.Var:
					return isError(n.Type()) || types.Identical(n.Type(), config)
				case result:
					fn, ok := n.fn.(*types.Func)
					return ok && n.i < fn.Signature().Results().Len() && isError(fn.Signature().Results().At(n.i).Type())
				}
				return false
			})
		}
		settings, why := map[any]map[any]bool{}, map[[2]any]any{}
		for v := range config.Underlying().(*types.Struct).Fields() {
			spread(next, settings, why, fieldOf(v, config, nil), v.Name())
		}
		f.reach(func(u *unit, subst map[*types.TypeParam]string) {
			for r := range u.reads {
				node := fieldOf(r.v, r.recv, subst)
				for l := range settings[node] {
					var chain []string
					for n := any(node); n != nil; n = why[[2]any{n, l}] {
						if fd, ok := n.(field); ok {
							chain = append(chain, fd.v.Pkg().Name()+"."+fd.v.Name())
						}
					}
					out[name][l.(string)] = chain
				}
			}
		}, root)
	}
	return out
}

// isError says whether t is an error type.
func isError(t types.Type) bool {
	return types.Implements(t, errorType) || types.Implements(types.NewPointer(t), errorType)
}

var errorType = types.Universe.Lookup("error").Type().Underlying().(*types.Interface)

// reach returns the units that roots may call, and the roots; visit sees each with the type
// arguments of its generic code.
func (f *flow) reach(visit func(u *unit, subst map[*types.TypeParam]string), roots ...*unit) map[*unit]bool {
	seen := map[*unit]bool{}
	seenAs := map[string]bool{}
	var walk func(u *unit, subst map[*types.TypeParam]string)
	walk = func(u *unit, subst map[*types.TypeParam]string) {
		key := fmt.Sprintf("%p %v", u, subst)
		if u == nil || seenAs[key] {
			return
		}
		seen[u], seenAs[key] = true, true
		if visit != nil {
			visit(u, subst)
		}
		for callee := range u.calls {
			generic := false
			for _, in := range u.inst {
				if in.callee == callee {
					generic = true
					next := map[*types.TypeParam]string{}
					for i := range in.tparams.Len() {
						arg := in.targs.At(i)
						if tp, ok := arg.(*types.TypeParam); ok && subst[tp] != "" {
							next[in.tparams.At(i)] = subst[tp]
						} else {
							next[in.tparams.At(i)] = types.TypeString(arg, nil)
						}
					}
					walk(f.units[callee], next)
				}
			}
			if !generic {
				walk(f.units[callee], subst)
			}
		}
	}
	for _, r := range roots {
		walk(r, nil)
	}
	return seen
}
