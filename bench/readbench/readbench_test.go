package readbench

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestCheckBlock_Stamps: a block holding its offset passes, with or
// without the overwrite mark; a block holding another's fails and says
// which.
func TestCheckBlock_Stamps(t *testing.T) {
	buf := make([]byte, 4*blockSize)
	stamp(buf, 1<<20, 0)
	if err := checkBlock(buf, 1<<20); err != nil {
		t.Fatal(err)
	}
	stamp(buf[blockSize:2*blockSize], 1<<20+blockSize, overwriteMark)
	if err := checkBlock(buf, 1<<20); err != nil {
		t.Fatalf("an overwritten block: %v", err)
	}
	stamp(buf[2*blockSize:3*blockSize], 0, 0)
	err := checkBlock(buf, 1<<20)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprint(1<<20+2*blockSize)) {
		t.Fatalf("a block from offset 0 at %d: %v, want an error naming the offset", 1<<20+2*blockSize, err)
	}
}

// TestScrape_Series: the sampled series are read from a Prometheus text
// exposition (labelled and other series ignored), and a missing one is
// an error.
func TestScrape_Series(t *testing.T) {
	body := ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, body)
	}))
	defer srv.Close()
	full := "# HELP x\n" + `ustore_request_duration_seconds_count{op="read",status="ok"} 9` + "\n"
	for i, s := range sampledSeries {
		full += fmt.Sprintf("%s %d\n", s, i+1)
	}
	body = full
	got, err := scrape(t.Context(), strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range sampledSeries {
		if got[s] != float64(i+1) {
			t.Fatalf("%s = %v, want %d", s, got[s], i+1)
		}
	}
	body = strings.Replace(full, seriesRSS, "process_other", 1)
	if _, err := scrape(t.Context(), srv.URL+"/metrics"); err == nil || !strings.Contains(err.Error(), seriesRSS) {
		t.Fatalf("without %s: %v, want an error naming it", seriesRSS, err)
	}
}

// TestRatio_Interval: the hit ratio is the hits over the look-ups that
// moved between two scrapes, 0 when none did.
func TestRatio_Interval(t *testing.T) {
	a := map[string]float64{seriesHits: 10, seriesMisses: 10}
	b := map[string]float64{seriesHits: 40, seriesMisses: 20}
	if r := ratio(a, b); r != 0.75 {
		t.Fatalf("ratio %v, want 0.75", r)
	}
	if r := ratio(b, b); r != 0 {
		t.Fatalf("ratio with nothing moved %v, want 0", r)
	}
}

// TestZipfConfig_Validate: bad configurations are refused with a reason.
func TestZipfConfig_Validate(t *testing.T) {
	good := ZipfConfig{Dir: "/z", Files: 4, DataBytes: 4 * 16 * blockSize, Workers: 1, S: 1.1,
		Duration: time.Second, Interval: time.Second}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*ZipfConfig){
		"no files":          func(c *ZipfConfig) { c.Files = 0 },
		"uneven data":       func(c *ZipfConfig) { c.DataBytes += blockSize },
		"exponent 1":        func(c *ZipfConfig) { c.S = 1 },
		"write share above": func(c *ZipfConfig) { c.WriteFrac = 1.5 },
		"no interval":       func(c *ZipfConfig) { c.Interval = 0 },
	} {
		c := good
		mod(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
