// Command ustore is the ustore storage service's one binary: the daemon, the
// client commands and the benchmarks, as subcommands.
package main

import (
	"errors"
	"fmt"
	"os"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the command failed
	exitUsage = 2 // bad flags or arguments
)

func main() {
	root := newRootCommand()
	err := root.Execute()
	if err != nil {
		fmt.Fprintf(os.Stderr, "ustore: %v\n", err)
	}
	os.Exit(exitCodeOf(err))
}

// exitCoder is an error that carries its own exit code (fsck's, which
// follow e2fsck's).
type exitCoder interface{ exitCode() int }

// exitCodeOf is the exit code for a command's error: 0 for none, 2 for a
// usage error, the error's own code if it has one, else 1.
func exitCodeOf(err error) int {
	var ec exitCoder
	switch {
	case err == nil:
		return exitOK
	case isUsage(err):
		return exitUsage
	case errors.As(err, &ec):
		return ec.exitCode()
	}
	return exitError
}
