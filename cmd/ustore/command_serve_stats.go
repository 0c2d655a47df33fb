package main

// The store's statistics on the metrics endpoint: `ustore serve
// --metrics-addr` serves store.Stats as ustore_store_<field> samples, read
// at each scrape, so that `ustore bench fsync-*` (and anyone with a
// Prometheus) can see how fsyncs ended — already committed, committed, or
// (with log trees) logged — without a protocol op. A field is a counter
// (served as ustore_store_<field>_total) unless its tag says
// `metric:"gauge"`; a map field is one family labelled by its key
// (`metric:"label=reason"` names the label); `metric:"name=cows"` names a
// field whose snake_case would read badly.

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode"

	"ustore/store"
	"ustore/trace"
)

// statsPrefix names the store's samples on /metrics.
const statsPrefix = "ustore_store_"

// registerStoreStats publishes st's Stats on the metrics endpoint (nothing
// when metrics are off).
func registerStoreStats(st *store.Store) error {
	return trace.RegisterStats(statsPrefix, func() []trace.Stat {
		return flattenStats(st.Stats())
	})
}

// flattenStats turns a stats struct into its samples: each numeric field
// by its snake_case name; a nested struct's fields and an array's
// elements after their field's name, a map's entries as one family with
// the key as a label — so that a counter added to store.Stats is served
// with no change here. The help names the Go field, whose comment says
// what it counts.
func flattenStats(stats any) []trace.Stat {
	v := reflect.ValueOf(stats)
	var out []trace.Stat
	flatten(&out, statField{goPath: v.Type().String()}, v)
	return out
}

// statField is where flatten is in the struct: the sample's name so far,
// the Go path for the help, the kind a tag set above, and a map's label.
type statField struct {
	name, goPath string
	kind         trace.StatKind
	label        string
}

func (f statField) join(name, goName string) statField {
	if f.name != "" {
		name = f.name + "_" + name
	}
	f.name, f.goPath = name, f.goPath+"."+goName
	return f
}

// fieldName is a field's part of its sample's name: the tag's
// "name=NAME", or the field's name in snake_case.
func fieldName(goName, tag string) string {
	for opt := range strings.SplitSeq(tag, ",") {
		if n, ok := strings.CutPrefix(opt, "name="); ok {
			return n
		}
	}
	return snakeCase(goName)
}

// withTag applies a field's `metric` tag: "gauge", "counter",
// "label=NAME" (a map's label); "name=NAME" is fieldName's.
func (f statField) withTag(tag string) statField {
	for opt := range strings.SplitSeq(tag, ",") {
		switch {
		case opt == "gauge":
			f.kind = trace.StatGauge
		case opt == "counter":
			f.kind = trace.StatCounter
		case strings.HasPrefix(opt, "label="):
			f.label = strings.TrimPrefix(opt, "label=")
		}
	}
	return f
}

func flatten(out *[]trace.Stat, f statField, v reflect.Value) {
	add := func(kind trace.StatKind, x float64) {
		s := trace.Stat{Name: f.name, Kind: kind, Value: x, Help: f.goPath + " (a " + kindName[kind] + ")."}
		*out = append(*out, s)
	}
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		add(f.kind, float64(v.Int()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		add(f.kind, float64(v.Uint()))
	case reflect.Float32, reflect.Float64:
		add(f.kind, v.Float())
	case reflect.Bool:
		x := 0.0
		if v.Bool() {
			x = 1
		}
		add(trace.StatGauge, x) // a state, never a count
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			if sf := t.Field(i); sf.IsExported() {
				tag := sf.Tag.Get("metric")
				flatten(out, f.join(fieldName(sf.Name, tag), sf.Name).withTag(tag), v.Field(i))
			}
		}
	case reflect.Array, reflect.Slice:
		for i := range v.Len() {
			flatten(out, f.join(strconv.Itoa(i), strconv.Itoa(i)), v.Index(i))
		}
	case reflect.Map:
		label := f.label
		if label == "" {
			label = "key"
		}
		for it := v.MapRange(); it.Next(); {
			n := len(*out)
			flatten(out, f, it.Value())
			for i := n; i < len(*out); i++ {
				(*out)[i].Label, (*out)[i].LabelValue = label, snakeCase(fmt.Sprint(it.Key().Interface()))
			}
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			flatten(out, f, v.Elem())
		}
	}
}

var kindName = [...]string{trace.StatCounter: "counter", trace.StatGauge: "gauge"}

// snakeCase: FsyncCommitted → fsync_committed, CsumErrors → csum_errors,
// LogSyncs → log_syncs, IOErrors → io_errors.
func snakeCase(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		if unicode.IsUpper(r) {
			// A word starts at an upper-case letter after a lower-case one
			// or a digit, or before a lower-case one in a run of capitals.
			if i > 0 && (!unicode.IsUpper(rs[i-1]) || i+1 < len(rs) && unicode.IsLower(rs[i+1])) && rs[i-1] != '_' {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
