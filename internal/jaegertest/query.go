package jaegertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Trace is one trace as Jaeger stores it, as a tree of spans.
type Trace struct {
	ID    string  // 32 hex digits
	Spans []*Span // every span, by start time
	// Roots are the spans whose parent is not in the trace: the root span,
	// and any span whose parent is remote or was lost.
	Roots []*Span
}

// Span is one span of a Trace.
type Span struct {
	TraceID, ID string
	ParentID    string // "" for a root
	Name        string
	Service     string // the resource's service.name
	Start, End  time.Time
	// Attributes are the span's attributes as text: strings as they are,
	// numbers and booleans as Go formats them (Jaeger returns int64 values
	// as JSON strings; both come out the same here), arrays and maps as JSON.
	Attributes map[string]string
	Events     []Event // by time
	Status     string  // "ERROR", "OK", or "" when unset
	StatusMsg  string  // the error's description

	Parent   *Span   // nil for a root
	Children []*Span // by start time
}

// Event is a span event (Jaeger's UI shows them as logs).
type Event struct {
	Name       string
	Time       time.Time
	Attributes map[string]string
}

// Root returns the trace's only root, or nil when it has none or several.
func (t *Trace) Root() *Span {
	if len(t.Roots) != 1 {
		return nil
	}
	return t.Roots[0]
}

// Find returns the first span (by start time) named name, or nil.
func (t *Trace) Find(name string) *Span {
	for _, s := range t.Spans {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// String draws the tree, one span a line with its attributes: for test
// failure messages.
func (t *Trace) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "trace %s (%d spans)\n", t.ID, len(t.Spans))
	var draw func(s *Span, depth int)
	draw = func(s *Span, depth int) {
		keys := make([]string, 0, len(s.Attributes))
		for k := range s.Attributes {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(&b, "%s%s", strings.Repeat("  ", depth+1), s.Name)
		for _, k := range keys {
			fmt.Fprintf(&b, " %s=%s", k, s.Attributes[k])
		}
		b.WriteByte('\n')
		for _, c := range s.Children {
			draw(c, depth+1)
		}
	}
	for _, r := range t.Roots {
		draw(r, 0)
	}
	return b.String()
}

// Traces returns the traces that have a span of service starting between
// start and end (the v3 API requires both bounds), at most 1000.
func (j *Jaeger) Traces(ctx context.Context, service string, start, end time.Time) ([]*Trace, error) {
	q := url.Values{
		"query.service_name":   {service},
		"query.start_time_min": {start.UTC().Format(time.RFC3339Nano)},
		"query.start_time_max": {end.UTC().Format(time.RFC3339Nano)},
		"query.num_traces":     {"1000"},
	}
	body, err := j.get(ctx, j.QueryURL()+"/api/v3/traces?"+q.Encode())
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseTraces(body)
}

// WaitTrace polls Jaeger until the trace traceID is there and has stopped
// growing (the same span count twice in a row), or ctx ends. Flush the
// exporter first (ForceFlush, or the shutdown Setup returned): spans still
// in its queue never arrive.
func (j *Jaeger) WaitTrace(ctx context.Context, traceID string) (*Trace, error) {
	var last *Trace
	for {
		t, err := j.trace(ctx, traceID)
		switch {
		case err != nil && !isNotFound(err):
			return nil, err
		case t != nil && last != nil && len(t.Spans) == len(last.Spans):
			return t, nil
		}
		last = t
		select {
		case <-ctx.Done():
			if last != nil {
				return last, nil
			}
			return nil, fmt.Errorf("jaegertest: trace %s not in Jaeger: %w", traceID, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// trace fetches one trace; a 404 comes back as an error isNotFound accepts.
func (j *Jaeger) trace(ctx context.Context, traceID string) (*Trace, error) {
	body, err := j.get(ctx, j.QueryURL()+"/api/v3/traces/"+url.PathEscape(traceID))
	if err != nil {
		return nil, err
	}
	traces, err := parseTraces(body)
	if err != nil {
		return nil, err
	}
	for _, t := range traces {
		if t.ID == traceID {
			return t, nil
		}
	}
	return nil, &errStatus{url: traceID, code: http.StatusNotFound, body: "no such trace in the answer"}
}

func isNotFound(err error) bool {
	var st *errStatus
	return errors.As(err, &st) && st.code == http.StatusNotFound
}

// The v3 API's answer: OTLP JSON (IDs in hex, times and int64 values as
// decimal strings) under "result".
type (
	apiAnswer struct {
		Result struct {
			ResourceSpans []struct {
				Resource struct {
					Attributes []apiKeyValue `json:"attributes"`
				} `json:"resource"`
				ScopeSpans []struct {
					Spans []apiSpan `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		} `json:"result"`
	}
	apiSpan struct {
		TraceID      string        `json:"traceId"`
		SpanID       string        `json:"spanId"`
		ParentSpanID string        `json:"parentSpanId"`
		Name         string        `json:"name"`
		Start        string        `json:"startTimeUnixNano"`
		End          string        `json:"endTimeUnixNano"`
		Attributes   []apiKeyValue `json:"attributes"`
		Events       []struct {
			Name       string        `json:"name"`
			Time       string        `json:"timeUnixNano"`
			Attributes []apiKeyValue `json:"attributes"`
		} `json:"events"`
		Status struct {
			Code    json.RawMessage `json:"code"` // 2, or "STATUS_CODE_ERROR"
			Message string          `json:"message"`
		} `json:"status"`
	}
	apiKeyValue struct {
		Key   string                     `json:"key"`
		Value map[string]json.RawMessage `json:"value"`
	}
)

// parseTraces turns a v3 answer into traces, grouping spans by trace ID and
// linking each to its parent.
func parseTraces(body []byte) ([]*Trace, error) {
	var a apiAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, fmt.Errorf("jaegertest: decoding the query answer: %w", err)
	}
	byID := map[string]*Trace{}
	var order []*Trace
	for _, rs := range a.Result.ResourceSpans {
		service := attributes(rs.Resource.Attributes)["service.name"]
		for _, ss := range rs.ScopeSpans {
			for _, as := range ss.Spans {
				s, err := convertSpan(as, service)
				if err != nil {
					return nil, err
				}
				t := byID[s.TraceID]
				if t == nil {
					t = &Trace{ID: s.TraceID}
					byID[s.TraceID] = t
					order = append(order, t)
				}
				t.Spans = append(t.Spans, s)
			}
		}
	}
	for _, t := range order {
		t.link()
	}
	return order, nil
}

// link sorts t's spans by start time and builds the tree.
func (t *Trace) link() {
	sort.SliceStable(t.Spans, func(a, b int) bool { return t.Spans[a].Start.Before(t.Spans[b].Start) })
	byID := make(map[string]*Span, len(t.Spans))
	for _, s := range t.Spans {
		byID[s.ID] = s
	}
	for _, s := range t.Spans { // in start order, so Children are too
		if p := byID[s.ParentID]; s.ParentID != "" && p != nil && p != s {
			s.Parent = p
			p.Children = append(p.Children, s)
		} else {
			t.Roots = append(t.Roots, s)
		}
	}
}

func convertSpan(as apiSpan, service string) (*Span, error) {
	s := &Span{
		TraceID:    strings.ToLower(as.TraceID),
		ID:         strings.ToLower(as.SpanID),
		ParentID:   strings.ToLower(as.ParentSpanID),
		Name:       as.Name,
		Service:    service,
		Attributes: attributes(as.Attributes),
	}
	s.Status, s.StatusMsg = statusName(as.Status.Code), as.Status.Message
	var err error
	if s.Start, err = unixNano(as.Start); err != nil {
		return nil, err
	}
	if s.End, err = unixNano(as.End); err != nil {
		return nil, err
	}
	for _, e := range as.Events {
		at, err := unixNano(e.Time)
		if err != nil {
			return nil, err
		}
		s.Events = append(s.Events, Event{Name: e.Name, Time: at, Attributes: attributes(e.Attributes)})
	}
	sort.SliceStable(s.Events, func(a, b int) bool { return s.Events[a].Time.Before(s.Events[b].Time) })
	return s, nil
}

// statusName maps OTLP JSON's status code, a number (what Jaeger sends) or
// the enum's name, to "OK", "ERROR" or "" (unset).
func statusName(raw json.RawMessage) string {
	switch strings.Trim(string(raw), `"`) {
	case "1", "STATUS_CODE_OK":
		return "OK"
	case "2", "STATUS_CODE_ERROR":
		return "ERROR"
	}
	return ""
}

func unixNano(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("jaegertest: bad time %q: %w", s, err)
	}
	return time.Unix(0, n), nil
}

// attributes flattens OTLP JSON key-values ({"key": k, "value":
// {"intValue": "5"}}) into text.
func attributes(kvs []apiKeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		for _, raw := range kv.Value { // one field: stringValue, intValue, ...
			var s string
			if json.Unmarshal(raw, &s) == nil {
				m[kv.Key] = s
			} else {
				m[kv.Key] = string(raw)
			}
		}
	}
	return m
}
