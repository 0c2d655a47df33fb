package main

// The progress bar of put and get: bytes moved, rate and time left, on
// stderr, drawn by github.com/schollz/progressbar. --progress auto (the
// default) draws it only when stderr is a terminal and the file is large
// enough for a bar to be worth seeing (transferProgressBytesMin) — never
// into a pipe or a log; always draws it anywhere (a spinner with bytes and
// rate when the size is unknown, as for stdin); never draws none.

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
)

// transferProgressBytesMin is the smallest size --progress auto draws a bar
// for: a smaller file moves in well under a second on a local socket.
const transferProgressBytesMin = 16 << 20

// progressModes are the values of --progress.
const progressModes = "auto (a terminal and at least 16 MiB), always, never"

// addProgressFlag defines put's and get's --progress.
func addProgressFlag(c *cobra.Command, mode *string) {
	c.Flags().StringVar(mode, "progress", "auto", "show a progress bar with rate and time left on stderr: "+progressModes)
}

// checkProgressMode refuses a --progress that is not one of progressModes,
// before anything is sent.
func checkProgressMode(mode string) error {
	switch mode {
	case "auto", "always", "never":
		return nil
	}
	return usageError{fmt.Errorf("--progress %q: want %s", mode, progressModes)}
}

// transferBar is the bar of one transfer, or nil when none is drawn. It is
// an io.Writer that counts the bytes written to it.
type transferBar struct {
	bar   *progressbar.ProgressBar
	total int64 // -1: unknown
}

// newTransferBar returns the bar for moving total bytes (-1: unknown)
// labelled desc, or nil when mode says not to draw one.
func newTransferBar(cmd *cobra.Command, mode, desc string, total int64) (*transferBar, error) {
	w := cmd.ErrOrStderr()
	switch mode {
	case "never":
		return nil, nil
	case "auto":
		if total < transferProgressBytesMin || !showProgress(mode, w) {
			return nil, nil
		}
	case "always":
	default:
		return nil, checkProgressMode(mode)
	}
	return &transferBar{total: total, bar: progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
	)}, nil
}

// reader counts what is read from r on the bar.
func (b *transferBar) reader(r io.Reader) io.Reader {
	if b == nil {
		return r
	}
	return io.TeeReader(r, b.bar)
}

// writer counts what is written to w on the bar.
func (b *transferBar) writer(w io.Writer) io.Writer {
	if b == nil {
		return w
	}
	return io.MultiWriter(w, b.bar)
}

// finish ends the bar: after a transfer of a known size that succeeded it
// draws the full bar, else it stays where it stopped; then a newline, so
// that what follows (an error) starts its own line.
func (b *transferBar) finish(ok bool) {
	if b == nil {
		return
	}
	if ok && b.total >= 0 && !b.bar.IsFinished() {
		b.bar.Finish()
		return
	}
	if !b.bar.IsFinished() {
		b.bar.Exit()
	}
}
