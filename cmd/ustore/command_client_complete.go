package main

// Shell completion of store paths: `ustore ls /da<TAB>` asks the server
// for the names in /. Cobra's completion scripts (`ustore completion
// bash|zsh|fish`) call the hidden `ustore __complete ...`, which runs the
// command's ValidArgsFunction with its flags parsed, so --socket and
// $USTORE_SOCKET choose the server as for the command itself.

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"ustore/client"
	"ustore/proto"
)

// completeTimeout bounds a completion's whole exchange with the server:
// the shell waits on it at every <TAB>, and when no server answers it
// must give up quickly and quietly.
const completeTimeout = 500 * time.Millisecond

// completeNamesMax bounds the names one completion offers (and so the
// pages it reads): no shell shows more usefully.
const completeNamesMax = 4096

// argKind is what a positional argument is, for completion.
type argKind int

const (
	argNone  argKind = iota // an offset, a size: nothing to complete
	argStore                // a path in the store: the server's names
	argLocal                // a local file: the shell's own completion
)

// completeArgs completes the i-th positional argument as kinds[i]; any
// further one as the last kind if repeat (PATH...), else not at all.
func completeArgs(cf *clientFlags, repeat bool, kinds ...argKind) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		k := argNone
		switch i := len(args); {
		case i < len(kinds):
			k = kinds[i]
		case repeat:
			k = kinds[len(kinds)-1]
		}
		switch k {
		case argLocal:
			return nil, cobra.ShellCompDirectiveDefault
		case argStore:
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			ctx, cancel := context.WithTimeout(ctx, completeTimeout)
			defer cancel()
			return completeStorePath(ctx, cf.socket, toComplete)
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeStorePath returns the names that complete toComplete in the
// store at socket, as typed (relative or absolute), directories with a
// trailing "/" (and then no space after the completion, so that the next
// <TAB> goes on into it). Any error, a missing server among them, is no
// completions: a shell has nowhere to show one.
func completeStorePath(ctx context.Context, socket, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	none := cobra.ShellCompDirectiveNoFileComp
	typedDir, prefix := "/", toComplete // nothing typed: absolute paths
	if i := strings.LastIndex(toComplete, "/"); i >= 0 {
		typedDir, prefix = toComplete[:i+1], toComplete[i+1:]
	} else if toComplete != "" {
		typedDir = "" // "da" completes to "data/", as typed
	}
	c, err := client.Dial(ctx, socket)
	if err != nil {
		return nil, none
	}
	defer c.Close()
	dir, err := c.Resolve(ctx, storePath(typedDir))
	if err != nil || !dir.IsDir() {
		return nil, none
	}
	var names []cobra.Completion
	directive := none
	err = readDirPages(ctx, c, dir.Ino, func(es []proto.DirEntry) bool {
		for _, e := range es {
			if !strings.HasPrefix(e.Name, prefix) || len(names) == completeNamesMax {
				continue
			}
			name := typedDir + e.Name
			if e.Type == dtDir {
				name += "/"
				directive |= cobra.ShellCompDirectiveNoSpace
			}
			names = append(names, name)
		}
		return len(names) < completeNamesMax
	})
	if err != nil {
		return nil, none
	}
	return names, directive
}
