// Command protogen writes the protobuf schema of the Kubernetes API types the apiserver serves in
// protobuf, as kube-cache-proxy's encoder reads it (src/protobuf/schema.json): for every Go struct
// reachable from the built-in kinds, its fields in the order and form the generated marshallers
// (k8s.io/api/*/generated.pb.go, go-to-protobuf with gogo's marshaler) write them, taken from the
// Go types themselves: each field's `protobuf:"..."` tag (number, wire type, name), its JSON name
// (or `,inline`), and its Go kind (pointer or not, slice, map, bytes), which decides what the
// marshaller writes for a zero value.
//
// Run from this directory: go run . > ../../src/protobuf/schema.json (npm test checks that the
// committed file is what this writes from the pinned modules).
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// Field is one struct field as the protobuf marshaller writes it.
type Field struct {
	// JSON is the field's JSON name; "" for a struct embedded with `json:",inline"`, whose JSON
	// fields sit in the parent object's while its protobuf form is a nested message.
	JSON string `json:"json"`
	// Number is the protobuf field number.
	Number int `json:"number"`
	// Type is what one value is (for a slice: one element).
	Type ValueType `json:"type"`
	// Pointer: written only when set (a Go pointer); otherwise written even when zero.
	Pointer bool `json:"pointer,omitempty"`
	// Repeated: a Go slice (each element written with the tag; nil and empty alike).
	Repeated bool `json:"repeated,omitempty"`
	// Map: a Go map, written as entries {1: key, 2: value} in key order.
	Map *MapType `json:"map,omitempty"`
}

// MapType is a map field's key and value.
type MapType struct {
	Key   ValueType `json:"key"`
	Value ValueType `json:"value"`
	// ValuePointer: a value written only when non-nil (bytes values: nil is not written).
	ValueNilable bool `json:"valueNilable,omitempty"`
}

// ValueType is a scalar kind ("string", "bool", "int32", "int64", "uint32", "uint64",
// "float64", "bytes") or a message: "message:<Go type name>".
type ValueType string

// Message is one Go struct's fields, in field-number order.
type Message struct {
	Fields []Field `json:"fields"`
}

// Schema is the whole file.
type Schema struct {
	// Kinds maps "group/version/Kind" ("" group for core) to the kind's Go type name.
	Kinds map[string]string `json:"kinds"`
	// Messages by Go type name (package path and name).
	Messages map[string]Message `json:"messages"`
	// Special lists the message types whose JSON or protobuf form is their own (custom
	// MarshalJSON or Marshal): the encoder must know each by name.
	Special []string `json:"special"`
}

var (
	jsonMarshaler  = reflect.TypeFor[json.Marshaler]()
	protoMarshaler = reflect.TypeFor[interface{ Marshal() ([]byte, error) }]()
)

type generator struct {
	schema  Schema
	special map[string]bool
}

func typeName(t reflect.Type) string { return t.PkgPath() + "." + t.Name() }

func main() {
	s := runtime.NewScheme()
	if err := scheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := apiregistrationv1.AddToScheme(s); err != nil {
		panic(err)
	}
	g := &generator{schema: Schema{Kinds: map[string]string{}, Messages: map[string]Message{}}, special: map[string]bool{}}
	for gvk, t := range s.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal || !servedInProtobuf(t) {
			continue
		}
		g.schema.Kinds[gvkKey(gvk)] = typeName(t)
		g.message(t)
	}
	// The meta types every answer may carry: lists, watch events, errors, metadata-only objects.
	for _, kind := range []any{metav1.Status{}, metav1.WatchEvent{}, metav1.PartialObjectMetadata{}, metav1.PartialObjectMetadataList{}, metav1.ListMeta{}} {
		t := reflect.TypeOf(kind)
		g.schema.Kinds[gvkKey(metav1.SchemeGroupVersion.WithKind(t.Name()))] = typeName(t)
		g.message(t)
	}
	for name := range g.special {
		g.schema.Special = append(g.schema.Special, name)
	}
	sort.Strings(g.schema.Special)
	out, err := json.Marshal(g.schema)
	if err != nil {
		panic(err)
	}
	os.Stdout.Write(append(out, '\n'))
}

func gvkKey(gvk schema.GroupVersionKind) string { return gvk.Group + "/" + gvk.Version + "/" + gvk.Kind }

// servedInProtobuf: a kind whose Go type has a generated protobuf marshaller.
func servedInProtobuf(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && reflect.PointerTo(t).Implements(protoMarshaler)
}

// message records a struct type's fields (and every struct they name); returns its name.
func (g *generator) message(t reflect.Type) string {
	name := typeName(t)
	if _, seen := g.schema.Messages[name]; seen {
		return name
	}
	if isSpecial(t) {
		g.special[name] = true
	}
	g.schema.Messages[name] = Message{} // a placeholder: recursive types stop here
	var fields []Field
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, ok := f.Tag.Lookup("protobuf")
		if !ok || tag == "-" {
			continue // TypeMeta and other fields protobuf leaves out
		}
		number, wire := parseTag(tag)
		jsonName := strings.Split(f.Tag.Get("json"), ",")[0]
		if strings.Contains(f.Tag.Get("json"), ",inline") {
			jsonName = ""
		}
		field := Field{JSON: jsonName, Number: number}
		ft := f.Type
		switch {
		case ft.Kind() == reflect.Pointer:
			field.Pointer = true
			field.Type = g.valueType(ft.Elem(), wire)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() != reflect.Uint8 && !hasProtoMethods(ft):
			field.Repeated = true
			field.Type = g.valueType(ft.Elem(), wire)
		case ft.Kind() == reflect.Map:
			valueNilable := ft.Elem().Kind() == reflect.Slice || ft.Elem().Kind() == reflect.Pointer
			field.Map = &MapType{Key: g.valueType(ft.Key(), "bytes"), Value: g.valueType(ft.Elem(), mapValueWire(f.Tag.Get("protobuf_val"))), ValueNilable: valueNilable}
			field.Type = "map"
		default:
			field.Type = g.valueType(ft, wire)
		}
		fields = append(fields, field)
	}
	sort.Slice(fields, func(i, j int) bool { return fields[i].Number < fields[j].Number })
	g.schema.Messages[name] = Message{Fields: fields}
	return name
}

// hasProtoMethods: a named slice type with a message form of its own (e.g. ExtraValue).
func hasProtoMethods(t reflect.Type) bool {
	return t.Name() != "" && reflect.PointerTo(t).Implements(protoMarshaler)
}

func (g *generator) valueType(t reflect.Type, wire string) ValueType {
	if hasProtoMethods(t) || t.Kind() == reflect.Struct {
		if t.Kind() != reflect.Struct {
			// A named slice with a message form of its own (ExtraValue: {1: repeated string}).
			g.special[typeName(t)] = true
			return ValueType("message:" + typeName(t))
		}
		return ValueType("message:" + g.message(t))
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int32:
		return "int32"
	case reflect.Int64, reflect.Int:
		return "int64"
	case reflect.Uint32:
		return "uint32"
	case reflect.Uint64:
		return "uint64"
	case reflect.Float64:
		return "float64"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "bytes"
		}
	}
	panic(fmt.Sprintf("protogen: no protobuf form for %s (%s, wire %s)", t, t.Kind(), wire))
}

// isSpecial: a struct with a JSON or protobuf form of its own (Time, Quantity, IntOrString...).
func isSpecial(t reflect.Type) bool {
	if t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) {
		return true
	}
	// A protobuf form not made from its fields: Quantity's Marshal is hand-written.
	for i := 0; i < t.NumField(); i++ {
		if _, ok := t.Field(i).Tag.Lookup("protobuf"); ok {
			return false
		}
	}
	return t.NumField() > 0 && reflect.PointerTo(t).Implements(protoMarshaler)
}

func parseTag(tag string) (int, string) {
	parts := strings.Split(tag, ",")
	number, err := strconv.Atoi(parts[1])
	if err != nil {
		panic(fmt.Sprintf("protogen: bad protobuf tag %q", tag))
	}
	return number, parts[0]
}

func mapValueWire(tag string) string {
	if tag == "" {
		return "bytes"
	}
	return strings.Split(tag, ",")[0]
}
