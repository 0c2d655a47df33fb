package jaegertest

import (
	"os"
	"testing"
)

// TestParseTraces_Tree parses an answer of Jaeger v1.76.0's
// /api/v3/traces/{id} (testdata/v3_trace.json, recorded from a trace
// exported through trace.Setup): one trace, a root and its child, with
// attributes, events in time order and the child's error status
// (Invariant 3).
func TestParseTraces_Tree(t *testing.T) {
	body, err := os.ReadFile("testdata/v3_trace.json")
	if err != nil {
		t.Fatal(err)
	}
	traces, err := parseTraces(body)
	if err != nil {
		t.Fatal(err)
	}
	if len(traces) != 1 {
		t.Fatalf("%d traces, want 1", len(traces))
	}
	tr := traces[0]
	root := tr.Root()
	if tr.ID != "ceb2cf9d3c705e4917f012c1b6452593" || len(tr.Spans) != 2 || root == nil || root.Name != "ustore.write" {
		t.Fatalf("want trace ceb2… with root ustore.write and 2 spans, got:\n%s", tr)
	}
	if root.Service != "ustore-dump" || root.Attributes["ustore.ino"] != "5" || root.Attributes["ustore.op"] != "write" ||
		root.Status != "" || !root.Start.Before(root.End) {
		t.Fatalf("root %+v", root)
	}
	if len(root.Children) != 1 || tr.Find("journal.commit") != root.Children[0] {
		t.Fatalf("journal.commit is not the root's only child:\n%s", tr)
	}
	c := root.Children[0]
	if c.Parent != root || c.ParentID != root.ID || c.Attributes["ustore.transid"] != "7" {
		t.Fatalf("child %+v", c)
	}
	if c.Status != "ERROR" || c.StatusMsg != "unexpected EOF" {
		t.Fatalf("child status %q %q, want ERROR unexpected EOF", c.Status, c.StatusMsg)
	}
	if len(c.Events) != 2 || c.Events[0].Name != "lock.wait" || c.Events[0].Attributes["ustore.nodes"] != "2" ||
		c.Events[1].Name != "exception" || c.Events[1].Attributes["exception.message"] != "unexpected EOF" {
		t.Fatalf("child events %+v, want lock.wait then exception", c.Events)
	}
}

// TestParseTraces_OrphansAndValues: spans of two traces interleaved are
// grouped; a span whose parent is absent is a root of its own (so Root is
// nil with two); every value type comes out as text.
func TestParseTraces_OrphansAndValues(t *testing.T) {
	body := `{"result":{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"s"}}]},
	 "scopeSpans":[{"spans":[
	  {"traceId":"AA","spanId":"01","name":"a","startTimeUnixNano":"1","endTimeUnixNano":"9",
	   "attributes":[{"key":"d","value":{"doubleValue":1.5}},{"key":"b","value":{"boolValue":true}},
	                 {"key":"i","value":{"intValue":"-3"}},{"key":"arr","value":{"arrayValue":{"values":[{"intValue":"1"}]}}}]},
	  {"traceId":"bb","spanId":"02","name":"other","startTimeUnixNano":"1","endTimeUnixNano":"2"},
	  {"traceId":"aa","spanId":"03","parentSpanId":"ff","name":"orphan","startTimeUnixNano":"2","endTimeUnixNano":"3",
	   "status":{"code":"STATUS_CODE_OK"}}]}]}]}}`
	traces, err := parseTraces([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(traces) != 2 || traces[0].ID != "aa" || len(traces[0].Spans) != 2 || traces[1].ID != "bb" {
		t.Fatalf("traces %v", traces)
	}
	a := traces[0]
	if a.Root() != nil || len(a.Roots) != 2 || a.Roots[1].Name != "orphan" || a.Roots[1].Status != "OK" {
		t.Fatalf("roots:\n%s", a)
	}
	want := map[string]string{"d": "1.5", "b": "true", "i": "-3", "arr": `{"values":[{"intValue":"1"}]}`}
	for k, v := range want {
		if got := a.Spans[0].Attributes[k]; got != v {
			t.Errorf("attribute %s = %q, want %q", k, got, v)
		}
	}
	if _, err := parseTraces([]byte(`{"result":`)); err == nil {
		t.Fatal("truncated answer parsed")
	}
}
