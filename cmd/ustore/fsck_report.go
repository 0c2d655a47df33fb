package main

// fsck's report: what it found, printed as text or as JSON (--json; the
// field names are documented in docs/CLI.md and must not change).

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"ustore/store"
)

// fsckReport is what fsck found, and fsck --json's output.
type fsckReport struct {
	Device    string        `json:"device"`
	Status    string        `json:"status"` // clean, warnings, problems, error
	ExitCode  int           `json:"exit_code"`
	Error     string        `json:"error,omitempty"` // why it could not check (status error)
	Replay    *fsckReplay   `json:"replay"`          // null: no fsync log to replay
	Trees     int           `json:"trees"`
	Nodes     int           `json:"nodes"`
	Items     int           `json:"items"`
	UsedBytes uint64        `json:"used_bytes"`
	FreeBytes uint64        `json:"free_bytes"`
	Warnings  []string      `json:"warnings"`
	Problems  []fsckProblem `json:"problems"`
	Scrub     *fsckScrub    `json:"scrub"` // null without --data
}

// fsckReplay is the fsync log fsck replayed.
type fsckReplay struct {
	LogGeneration uint64 `json:"log_generation"`
	Applied       bool   `json:"applied"`
	Inodes        int    `json:"inodes"`
	DirRanges     int    `json:"dir_ranges"`
	FileRanges    int    `json:"file_ranges"`
	Error         string `json:"error,omitempty"` // why it was not applied
}

// fsckProblem is one problem. Kind is "mount" (a ustore filesystem too
// damaged to mount: nothing else was checked), "check" (trees, space,
// superblocks, namespace), "log" (a damaged fsync log), "data" (a bad data
// block, with Block) or "scrub" (the scrub stopped).
type fsckProblem struct {
	Kind    string        `json:"kind"`
	Message string        `json:"message"`
	Block   *fsckBadBlock `json:"block,omitempty"`
}

// fsckBadBlock is a data block that failed its checksum.
type fsckBadBlock struct {
	Ino    uint64   `json:"ino"`
	Offset uint64   `json:"offset"` // in the file
	Bytenr uint64   `json:"bytenr"` // on the device
	Paths  []string `json:"paths"`
}

// fsckScrub is what fsck --data read.
type fsckScrub struct {
	Bytes    uint64  `json:"bytes"`
	Extents  int     `json:"extents"`
	Seconds  float64 `json:"seconds"`
	MBps     float64 `json:"mb_per_s"`
	BadCount int     `json:"bad_count"` // every bad block; problems lists at most the first 100
	took     time.Duration
}

func (r *fsckReport) problem(kind, msg string) {
	r.Problems = append(r.Problems, fsckProblem{Kind: kind, Message: msg})
}

func (r *fsckReport) addScrub(sr *store.ScrubReport) {
	sc := &fsckScrub{Bytes: sr.Bytes, Extents: sr.Extents, Seconds: sr.Took.Seconds(), BadCount: sr.BadCount, took: sr.Took}
	if sec := sr.Took.Seconds(); sec > 0 {
		sc.MBps = float64(sr.Bytes) / 1e6 / sec
	}
	r.Scrub = sc
	for _, b := range sr.Bad {
		paths := b.Paths
		if paths == nil {
			paths = []string{}
		}
		r.Problems = append(r.Problems, fsckProblem{Kind: "data", Message: b.Err.Error(),
			Block: &fsckBadBlock{Ino: uint64(b.Ino), Offset: b.Offset, Bytenr: b.Bytenr, Paths: paths}})
	}
	if cut := sr.BadCount - len(sr.Bad); cut > 0 {
		r.problem("data", fmt.Sprintf("... and %d more bad blocks", cut))
	}
}

// err is the report's outcome as the command's error: nil when clean, else
// an error with fsck's exit code.
func (r *fsckReport) err() error {
	switch r.ExitCode {
	case fsckClean:
		return nil
	case fsckWarnings:
		return &fsckExit{code: fsckWarnings, err: fmt.Errorf("fsck %s: sound, with warnings (damage that lost nothing; see above)", r.Device)}
	}
	return &fsckExit{code: r.ExitCode, err: errFsck}
}

// errFsck: fsck found problems (exit code 4, after the report).
var errFsck = errors.New("fsck found problems")

// writeText prints the report as fsck always has: the replay, the counts,
// the warnings, the scrub, then the problems or "clean".
func (r *fsckReport) writeText(out io.Writer) {
	if rp := r.Replay; rp != nil {
		if rp.Applied {
			fmt.Fprintf(out, "%s: replayed the fsync log (log generation %d): %d inodes, %d directory ranges, %d file ranges\n",
				r.Device, rp.LogGeneration, rp.Inodes, rp.DirRanges, rp.FileRanges)
		} else {
			fmt.Fprintf(out, "%s: the fsync log (log generation %d) was damaged and not applied: %s\n", r.Device, rp.LogGeneration, rp.Error)
		}
	}
	if len(r.Problems) == 0 || r.Problems[0].Kind != "mount" {
		fmt.Fprintf(out, "%s: %d trees, %d nodes, %d items; %d bytes referenced, %d free\n",
			r.Device, r.Trees, r.Nodes, r.Items, r.UsedBytes, r.FreeBytes)
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(out, "warning: %s\n", w)
	}
	var bad []fsckProblem
	var other []string
	for _, p := range r.Problems {
		switch {
		case p.Kind == "data":
			bad = append(bad, p)
		case p.Kind != "log": // the replay line said it
			other = append(other, p.Message)
		}
	}
	if sc := r.Scrub; sc != nil {
		fmt.Fprintf(out, "%s: scrubbed %d bytes of data (%d extents) in %v: %.0f MB/s; %d bad blocks\n",
			r.Device, sc.Bytes, sc.Extents, sc.took.Round(time.Microsecond), sc.MBps, sc.BadCount)
		if len(bad) > 0 {
			fmt.Fprintln(out, "bad data blocks:")
		}
		for _, p := range bad {
			if b := p.Block; b != nil {
				paths := strings.Join(b.Paths, " ")
				if paths == "" {
					paths = "(path unknown)"
				}
				fmt.Fprintf(out, "  inode %d offset %d (device block %d) %s: %s\n", b.Ino, b.Offset, b.Bytenr, paths, p.Message)
			} else {
				fmt.Fprintf(out, "  %s\n", p.Message)
			}
		}
	}
	if len(other) > 0 {
		fmt.Fprintf(out, "problems:\n%s\n", strings.Join(other, "\n"))
	}
	if r.ExitCode <= fsckWarnings {
		fmt.Fprintln(out, "clean")
	}
}
