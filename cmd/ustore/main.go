// Command ustore is the ustore storage service's one binary: the daemon, the
// client commands and the benchmarks, as subcommands.
package main

import (
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
	if err := root.Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "ustore: %v\n", err)
		if isUsage(err) {
			os.Exit(exitUsage)
		}
		os.Exit(exitError)
	}
	os.Exit(exitOK)
}
