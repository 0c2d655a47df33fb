package main

// The store's counters on the metrics endpoint: `ustore serve
// --metrics-addr` serves store.Stats as ustore_store_<field> samples, read
// at each scrape, so that `ustore bench fsync-*` (and anyone with a
// Prometheus) can see how fsyncs ended — already committed, committed, or
// (with log trees) logged — without a protocol op.

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
	return trace.RegisterStats(statsPrefix, func() map[string]float64 {
		return flattenStats(st.Stats())
	})
}

// flattenStats turns a stats struct into name → value: each numeric field
// by its snake_case name; a nested struct's fields, an array's elements
// and a map's entries after their field's name — so that a counter added
// to store.Stats is served with no change here.
func flattenStats(stats any) map[string]float64 {
	m := map[string]float64{}
	flatten(m, "", reflect.ValueOf(stats))
	return m
}

func flatten(m map[string]float64, name string, v reflect.Value) {
	join := func(s string) string {
		if name == "" {
			return s
		}
		return name + "_" + s
	}
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		m[name] = float64(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		m[name] = float64(v.Uint())
	case reflect.Float32, reflect.Float64:
		m[name] = v.Float()
	case reflect.Bool:
		m[name] = 0
		if v.Bool() {
			m[name] = 1
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				flatten(m, join(snakeCase(f.Name)), v.Field(i))
			}
		}
	case reflect.Array, reflect.Slice:
		for i := range v.Len() {
			flatten(m, join(strconv.Itoa(i)), v.Index(i))
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			flatten(m, join(snakeCase(fmt.Sprint(it.Key().Interface()))), it.Value())
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			flatten(m, name, v.Elem())
		}
	}
}

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
