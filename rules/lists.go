package rules

import (
	"fmt"
	"reflect"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"github.com/quanhq/quan"
)

// itemList is order.items without copying the items: elements are
// pointers into the order's slice.
type itemList struct {
	items []quan.OrderItemFacts
}

func (l *itemList) elem(i int) ref.Val { return itemVal{&l.items[i]} }

// refList copies the list into a generic one, for the rare operations
// (concatenation, list equality) not worth writing twice.
func (l *itemList) refList() traits.Lister {
	vals := make([]ref.Val, len(l.items))
	for i := range l.items {
		vals[i] = l.elem(i)
	}
	return types.NewRefValList(types.DefaultTypeAdapter, vals)
}

func (l *itemList) Add(other ref.Val) ref.Val { return l.refList().Add(other) }

func (l *itemList) Contains(v ref.Val) ref.Val {
	for i := range l.items {
		if l.elem(i).Equal(v) == types.True {
			return types.True
		}
	}
	return types.False
}

func (l *itemList) ConvertToNative(t reflect.Type) (any, error) {
	return l.refList().ConvertToNative(t)
}

func (l *itemList) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case types.ListType:
		return l
	case types.TypeType:
		return types.ListType
	}
	return types.NewErr("type conversion error from 'list' to '%s'", t)
}

func (l *itemList) Equal(other ref.Val) ref.Val { return l.refList().Equal(other) }

func (l *itemList) Get(index ref.Val) ref.Val {
	i, err := types.IndexOrError(index)
	if err != nil {
		return types.ValOrErr(index, "%v", err)
	}
	if i < 0 || i >= len(l.items) {
		return types.NewErr("index '%d' out of range in list size '%d'", i, len(l.items))
	}
	return l.elem(i)
}

func (l *itemList) Iterator() traits.Iterator { return &itemIterator{l: l} }
func (l *itemList) Size() ref.Val             { return types.Int(len(l.items)) }
func (l *itemList) Type() ref.Type            { return types.ListType }
func (l *itemList) Value() any                { return l.items }

type itemIterator struct {
	l *itemList
	i int
}

func (it *itemIterator) HasNext() ref.Val { return types.Bool(it.i < len(it.l.items)) }

func (it *itemIterator) Next() ref.Val {
	if it.i >= len(it.l.items) {
		return nil
	}
	it.i++
	return it.l.elem(it.i - 1)
}

func (it *itemIterator) ConvertToNative(t reflect.Type) (any, error) {
	return nil, fmt.Errorf("type conversion on iterators not supported")
}
func (it *itemIterator) ConvertToType(ref.Type) ref.Val { return types.NewErr("no such overload") }
func (it *itemIterator) Equal(ref.Val) ref.Val          { return types.NewErr("no such overload") }
func (it *itemIterator) Type() ref.Type                 { return types.IteratorType }
func (it *itemIterator) Value() any                     { return nil }

// stringList is user.tags or order.categories. `"vip" in user.tags`, the
// commonest test, compares in place instead of boxing every element as
// CEL's own string list does; the rest is CEL's.
type stringList struct{ s []string }

func (l *stringList) Contains(v ref.Val) ref.Val {
	s, ok := v.(types.String)
	if !ok {
		return l.list().Contains(v)
	}
	for _, e := range l.s {
		if e == string(s) {
			return types.True
		}
	}
	return types.False
}

func (l *stringList) list() traits.Lister { return types.NewStringList(types.DefaultTypeAdapter, l.s) }

func (l *stringList) Add(other ref.Val) ref.Val { return l.list().Add(other) }
func (l *stringList) ConvertToNative(t reflect.Type) (any, error) {
	return l.list().ConvertToNative(t)
}
func (l *stringList) ConvertToType(t ref.Type) ref.Val { return l.list().ConvertToType(t) }
func (l *stringList) Equal(other ref.Val) ref.Val      { return l.list().Equal(other) }
func (l *stringList) Get(index ref.Val) ref.Val        { return l.list().Get(index) }
func (l *stringList) Iterator() traits.Iterator        { return l.list().Iterator() }
func (l *stringList) Size() ref.Val                    { return types.Int(len(l.s)) }
func (l *stringList) Type() ref.Type                   { return types.ListType }
func (l *stringList) Value() any                       { return l.s }
