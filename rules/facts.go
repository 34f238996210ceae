package rules

import (
	"fmt"
	"reflect"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"

	"github.com/quanhq/quan"
)

// The facts reach CEL as three object types read straight from the quan
// structs through typed accessors: no map is built per evaluation and no
// reflection runs on the hot path. Declaring them as objects (rather than
// map(string, dyn)) lets the checker refuse a misspelt field when the rule
// is saved.
const (
	userTypeName  = "quan.User"
	orderTypeName = "quan.Order"
	itemTypeName  = "quan.OrderItem"
)

var (
	userType  = types.NewObjectType(userTypeName)
	orderType = types.NewObjectType(orderTypeName)
	itemType  = types.NewObjectType(itemTypeName)
)

// orderVal is the order an evaluation sees: the facts, and the rule's now
// for an order without a time. hour is computed only if a rule asks.
type orderVal struct {
	o   *quan.OrderFacts
	now time.Time
}

func (v *orderVal) at() time.Time {
	if v.o.At.IsZero() {
		return v.now
	}
	return v.o.At
}

// userVal and itemVal wrap a pointer in a one-pointer struct, which Go
// stores in an interface without allocating.
type (
	userVal  struct{ u *quan.UserFacts }
	orderRef struct{ o *orderVal }
	itemVal  struct{ it *quan.OrderItemFacts }
)

// field is one field of a fact object: its CEL type and how to read it
// from the Go value the activation or a list hands over.
type field struct {
	typ   *types.Type
	get   func(obj any) ref.Val
	isSet func(obj any) bool
}

// objType is one of the fact object types.
type objType struct {
	typ    *types.Type
	names  []string
	fields map[string]*types.FieldType
}

func newObjType(t *types.Type, fields []namedField) *objType {
	o := &objType{typ: t, fields: make(map[string]*types.FieldType, len(fields))}
	for _, nf := range fields {
		get := nf.f.get
		o.names = append(o.names, nf.name)
		o.fields[nf.name] = &types.FieldType{
			Type:    nf.f.typ,
			IsSet:   nf.f.isSet,
			GetFrom: func(obj any) (any, error) { return get(obj), nil },
		}
	}
	return o
}

type namedField struct {
	name string
	f    field
}

// The accessors accept the raw pointer (what the activation resolves and
// what a field qualifier receives) and the wrapper (what a list element or
// a whole-object value is).
func asUser(obj any) *quan.UserFacts {
	switch v := obj.(type) {
	case *quan.UserFacts:
		return v
	case userVal:
		return v.u
	}
	panic(fmt.Sprintf("rules: %T is not a user", obj)) // a bug in this package, never the rule's
}

func asOrder(obj any) *orderVal {
	switch v := obj.(type) {
	case *orderVal:
		return v
	case orderRef:
		return v.o
	}
	panic(fmt.Sprintf("rules: %T is not an order", obj))
}

func asItem(obj any) *quan.OrderItemFacts {
	switch v := obj.(type) {
	case *quan.OrderItemFacts:
		return v
	case itemVal:
		return v.it
	}
	panic(fmt.Sprintf("rules: %T is not an order item", obj))
}

func intField(get func(obj any) int64) field {
	return field{
		typ:   types.IntType,
		get:   func(obj any) ref.Val { return types.Int(get(obj)) },
		isSet: func(obj any) bool { return get(obj) != 0 },
	}
}

func stringField(get func(obj any) string) field {
	return field{
		typ:   types.StringType,
		get:   func(obj any) ref.Val { return types.String(get(obj)) },
		isSet: func(obj any) bool { return get(obj) != "" },
	}
}

func stringsField(get func(obj any) []string) field {
	return field{
		typ:   types.NewListType(types.StringType),
		get:   func(obj any) ref.Val { return &stringList{get(obj)} },
		isSet: func(obj any) bool { return len(get(obj)) != 0 },
	}
}

func timeField(get func(obj any) time.Time) field {
	return field{
		typ:   types.TimestampType,
		get:   func(obj any) ref.Val { return types.Timestamp{Time: get(obj)} },
		isSet: func(obj any) bool { return !get(obj).IsZero() },
	}
}

// factTypes are the fact object types of one engine (the order's hour
// depends on the engine's time zone).
type factTypes struct {
	user, order, item *objType
	base              types.Provider
	adapter           types.Adapter
}

func newFactTypes(loc *time.Location) *factTypes {
	user := newObjType(userType, []namedField{
		{"userId", intField(func(o any) int64 { return asUser(o).UserID })},
		{"level", intField(func(o any) int64 { return asUser(o).Level })},
		{"tags", stringsField(func(o any) []string { return asUser(o).Tags })},
		{"registeredAt", timeField(func(o any) time.Time {
			// An unknown registration is the Unix epoch, as CEL's native
			// types do: `now - user.registeredAt` then stays within a
			// duration's range.
			if t := asUser(o).RegisteredAt; !t.IsZero() {
				return t
			}
			return time.Unix(0, 0).UTC()
		})},
		{"region", stringField(func(o any) string { return asUser(o).Region })},
		{"orders", intField(func(o any) int64 { return asUser(o).Orders })},
		{"attrs", field{
			typ: types.NewMapType(types.StringType, types.StringType),
			get: func(o any) ref.Val {
				return types.NewStringStringMap(types.DefaultTypeAdapter, asUser(o).Attrs)
			},
			isSet: func(o any) bool { return len(asUser(o).Attrs) != 0 },
		}},
	})
	order := newObjType(orderType, []namedField{
		{"shop", intField(func(o any) int64 { return asOrder(o).o.Shop })},
		{"channel", stringField(func(o any) string { return asOrder(o).o.Channel })},
		{"total", intField(func(o any) int64 { return asOrder(o).o.Total })},
		{"items", field{
			typ:   types.NewListType(itemType),
			get:   func(o any) ref.Val { return &itemList{items: asOrder(o).o.Items} },
			isSet: func(o any) bool { return len(asOrder(o).o.Items) != 0 },
		}},
		{"categories", stringsField(func(o any) []string { return asOrder(o).o.Categories })},
		{"hour", field{
			typ:   types.IntType,
			get:   func(o any) ref.Val { return types.Int(asOrder(o).at().In(loc).Hour()) },
			isSet: func(any) bool { return true },
		}},
		{"at", timeField(func(o any) time.Time { return asOrder(o).at() })},
	})
	return &factTypes{user: user, order: order, item: itemDef}
}

// itemDef depends on nothing of the engine, so items (there may be many
// per order) are their own values without a pointer to it.
var itemDef = newObjType(itemType, []namedField{
	{"goodsId", stringField(func(o any) string { return asItem(o).GoodsID })},
	{"categoryId", stringField(func(o any) string { return asItem(o).CategoryID })},
	{"price", intField(func(o any) int64 { return asItem(o).Price })},
	{"qty", intField(func(o any) int64 { return asItem(o).Qty })},
})

// option installs the fact types as the env's type provider and adapter,
// over whatever the env had (the standard types).
func (ft *factTypes) option() cel.EnvOption {
	return func(env *cel.Env) (*cel.Env, error) {
		ft.base = env.CELTypeProvider()
		ft.adapter = env.CELTypeAdapter()
		env, err := cel.CustomTypeAdapter(ft)(env)
		if err != nil {
			return nil, err
		}
		return cel.CustomTypeProvider(ft)(env)
	}
}

func (ft *factTypes) lookup(name string) *objType {
	switch name {
	case userTypeName:
		return ft.user
	case orderTypeName:
		return ft.order
	case itemTypeName:
		return ft.item
	}
	return nil
}

// EnumValue implements types.Provider.
func (ft *factTypes) EnumValue(name string) ref.Val { return ft.base.EnumValue(name) }

// FindIdent implements types.Provider.
func (ft *factTypes) FindIdent(name string) (ref.Val, bool) { return ft.base.FindIdent(name) }

// FindStructType implements types.Provider.
func (ft *factTypes) FindStructType(name string) (*types.Type, bool) {
	if o := ft.lookup(name); o != nil {
		return types.NewTypeTypeWithParam(o.typ), true
	}
	return ft.base.FindStructType(name)
}

// FindStructFieldNames implements types.Provider.
func (ft *factTypes) FindStructFieldNames(name string) ([]string, bool) {
	if o := ft.lookup(name); o != nil {
		return o.names, true
	}
	return ft.base.FindStructFieldNames(name)
}

// FindStructFieldType implements types.Provider.
func (ft *factTypes) FindStructFieldType(name, fieldName string) (*types.FieldType, bool) {
	if o := ft.lookup(name); o != nil {
		f, ok := o.fields[fieldName]
		return f, ok
	}
	return ft.base.FindStructFieldType(name, fieldName)
}

// NewValue implements types.Provider: facts come from quan, a rule cannot
// make them up.
func (ft *factTypes) NewValue(name string, fields map[string]ref.Val) ref.Val {
	if o := ft.lookup(name); o != nil {
		return types.NewErr("%s cannot be created in a rule", name)
	}
	return ft.base.NewValue(name, fields)
}

// NativeToValue implements types.Adapter.
func (ft *factTypes) NativeToValue(v any) ref.Val {
	switch v := v.(type) {
	case ref.Val:
		return v
	case *quan.UserFacts:
		return &object{def: ft.user, val: userVal{v}}
	case *orderVal:
		return &object{def: ft.order, val: orderRef{v}}
	case *quan.OrderItemFacts:
		return itemVal{v}
	}
	return ft.adapter.NativeToValue(v)
}

// object is a whole user or order used as a value (`user` alone, rare).
// Field access on it goes through its type's accessors.
type object struct {
	def *objType
	val any // userVal or orderRef
}

func (o *object) ConvertToNative(t reflect.Type) (any, error) {
	return nil, fmt.Errorf("type conversion error from '%s' to '%v'", o.def.typ.TypeName(), t)
}

func (o *object) ConvertToType(t ref.Type) ref.Val {
	switch {
	case t == types.TypeType:
		return o.def.typ
	case t.TypeName() == o.def.typ.TypeName():
		return o
	}
	return types.NewErr("type conversion error from '%s' to '%s'", o.def.typ.TypeName(), t)
}

// Equal holds for the very same user or order only.
func (o *object) Equal(other ref.Val) ref.Val {
	p, ok := other.(*object)
	return types.Bool(ok && p.def == o.def && p.val == o.val)
}

func (o *object) Type() ref.Type             { return o.def.typ }
func (o *object) Value() any                 { return o.val }
func (o *object) Get(name ref.Val) ref.Val   { return o.def.get(o.val, name) }
func (o *object) IsSet(name ref.Val) ref.Val { return o.def.isSet(o.val, name) }

// get and isSet serve a whole object's Get and IsSet (traits.Indexer,
// traits.FieldTester); the getters return ref.Val already.
func (d *objType) get(val any, name ref.Val) ref.Val {
	f, err := d.field(name)
	if err != nil {
		return err
	}
	v, _ := f.GetFrom(val)
	return v.(ref.Val)
}

func (d *objType) isSet(val any, name ref.Val) ref.Val {
	f, err := d.field(name)
	if err != nil {
		return err
	}
	return types.Bool(f.IsSet(val))
}

func (d *objType) field(name ref.Val) (*types.FieldType, ref.Val) {
	s, ok := name.(types.String)
	if !ok {
		return nil, types.MaybeNoSuchOverloadErr(name)
	}
	f, ok := d.fields[string(s)]
	if !ok {
		return nil, types.NewErr("no such field: %s", s)
	}
	return f, nil
}

// itemVal is an item of order.items as a CEL value.
func (v itemVal) ConvertToNative(t reflect.Type) (any, error) {
	return nil, fmt.Errorf("type conversion error from '%s' to '%v'", itemTypeName, t)
}

func (v itemVal) ConvertToType(t ref.Type) ref.Val {
	switch {
	case t == types.TypeType:
		return itemType
	case t.TypeName() == itemTypeName:
		return v
	}
	return types.NewErr("type conversion error from '%s' to '%s'", itemTypeName, t)
}

// Equal compares by content: two items with the same goods, category,
// price and quantity are equal.
func (v itemVal) Equal(other ref.Val) ref.Val {
	p, ok := other.(itemVal)
	return types.Bool(ok && *p.it == *v.it)
}

func (v itemVal) Type() ref.Type             { return itemType }
func (v itemVal) Value() any                 { return v }
func (v itemVal) Get(name ref.Val) ref.Val   { return itemDef.get(v, name) }
func (v itemVal) IsSet(name ref.Val) ref.Val { return itemDef.isSet(v, name) }

// activation resolves the three variables without building a map.
type activation struct {
	user  *quan.UserFacts
	order orderVal // order.o nil for eligibility and segment rules
	now   time.Time
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case "user":
		return a.user, true
	case "order":
		if a.order.o == nil {
			return nil, false
		}
		return &a.order, true
	case "now":
		return types.Timestamp{Time: a.now}, true
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }
