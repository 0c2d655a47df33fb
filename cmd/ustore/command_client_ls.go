package main

// ls: a directory's names, in long format (-l, with -h sizes), or as JSON.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"ustore/client"

	"ustore/proto"
)

// lsFormat is how ls prints: names only, long lines, or JSON.
type lsFormat struct {
	long, human, asJSON bool
}

// stats says whether the format needs each entry's attributes.
func (f lsFormat) stats() bool { return f.long || f.asJSON }

// lsEntryJSON is one element of ls --json's array: the name in its
// directory, then the fields of stat --json.
type lsEntryJSON struct {
	Name string `json:"name"`
	statJSON
}

func newLsCommand() *cobra.Command {
	var cf clientFlags
	var f lsFormat
	c := &cobra.Command{
		Use:   "ls [PATH]",
		Short: "List a directory (the root by default)",
		Long: `List the names in the directory at PATH (the root by default), in the
order they were created, one a line. A PATH that is a file lists itself.
With -l (long format) each line is: mode, links, size in bytes (-h: in K,
M, G, T, powers of 1024, as ls -lh), time of the last change to the content
(mtime), name, and for a symbolic link " -> " and its target (ls lists a
link, never what it points at). With --json the listing is one JSON array of objects, each
the entry's name and the fields of 'stat --json' (docs/CLI.md). Large
directories are listed page by page (1024 names a request), as they are
read.` + clientLong,
		Example: `  ustore ls
  ustore ls -lh /data
  ustore ls --json /data | jq -r '.[] | select(.type == "file") | .path'`,
		Args: rangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := "/"
			if len(args) == 1 {
				p = storePath(args[0])
			}
			return cf.runAt(cmd, "ls", p, func(s *session, a proto.Attr) error {
				w := &lsWriter{out: cmd.OutOrStdout(), f: f}
				if !a.IsDir() {
					var target string
					if f.stats() {
						var err error
						if target, err = s.targetOf(p, a); err != nil {
							return err
						}
					}
					if err := w.write([]proto.DirEntry{{Name: p, Ino: a.Ino}}, []*proto.Attr{&a}, []string{target}, "/"); err != nil {
						return err
					}
					return w.end()
				}
				var perr error
				err := readDirPages(s.ctx, s.c, a.Ino, func(es []proto.DirEntry) bool {
					perr = s.printEntries(w, p, es)
					return perr == nil
				})
				if err != nil {
					return s.fail("ls", p, err)
				}
				if perr != nil {
					return perr
				}
				return w.end()
			})
		},
	}
	c.ValidArgsFunction = completeArgs(&cf, false, argStore)
	cf.add(c)
	// -h is human-readable, as ls's: --help keeps only its long name.
	c.Flags().Bool("help", false, "help for ls")
	c.Flags().BoolVarP(&f.long, "long", "l", false, "long format: mode, links, size, mtime, name")
	c.Flags().BoolVarP(&f.human, "human-readable", "h", false, "with -l: sizes in K, M, G, T (powers of 1024)")
	c.Flags().BoolVar(&f.asJSON, "json", false, "print one JSON array of the entries and their attributes")
	return c
}

// printEntries prints one page of a listing; in long format or JSON it
// stats every entry first, pipelined, and reads each symbolic link's
// target. An entry removed meanwhile is left out.
func (s *session) printEntries(w *lsWriter, dir string, es []proto.DirEntry) error {
	attrs := make([]*proto.Attr, len(es))
	targets := make([]string, len(es))
	if w.f.stats() {
		err := forEach(statParallel, es, func(i int, e proto.DirEntry) error {
			p := path.Join(dir, e.Name)
			a, err := s.c.Stat(s.ctx, e.Ino)
			if err == nil {
				targets[i], err = s.targetOf(p, a)
			}
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return s.fail("stat", p, err)
			}
			attrs[i] = &a
			return nil
		})
		if err != nil {
			return err
		}
	}
	return w.write(es, attrs, targets, dir)
}

// lsWriter prints a listing page by page: a JSON array is opened before
// the first page and closed by end.
type lsWriter struct {
	out     io.Writer
	f       lsFormat
	entries int // written so far
}

// write prints es (with attrs and symbolic link targets, where the format
// needs them; a nil attr is an entry removed meanwhile) of the directory
// dir.
func (w *lsWriter) write(es []proto.DirEntry, attrs []*proto.Attr, targets []string, dir string) error {
	switch {
	case w.f.asJSON:
		for i, e := range es {
			if attrs[i] == nil {
				continue
			}
			b, err := json.MarshalIndent(lsEntryJSON{Name: e.Name, statJSON: statJSONOf(path.Join(dir, e.Name), *attrs[i], targets[i])}, "  ", "  ")
			if err != nil {
				return err
			}
			sep := ",\n  "
			if w.entries == 0 {
				sep = "[\n  "
			}
			w.entries++
			if _, err := fmt.Fprintf(w.out, "%s%s", sep, b); err != nil {
				return err
			}
		}
		return nil
	case w.f.long:
		tw := tabwriter.NewWriter(w.out, 0, 0, 1, ' ', 0)
		for i, e := range es {
			if attrs[i] != nil {
				w.printLong(tw, *attrs[i], e.Name, targets[i])
			}
		}
		return tw.Flush()
	}
	for _, e := range es {
		if _, err := fmt.Fprintln(w.out, e.Name); err != nil {
			return err
		}
	}
	return nil
}

// end closes the listing: the JSON array.
func (w *lsWriter) end() error {
	if !w.f.asJSON {
		return nil
	}
	end := "\n]\n"
	if w.entries == 0 {
		end = "[]\n"
	}
	_, err := io.WriteString(w.out, end)
	return err
}

// printLong prints one ls -l line: mode, links, size, mtime, name, and a
// symbolic link's target.
func (w *lsWriter) printLong(tw io.Writer, a proto.Attr, name, target string) {
	size := strconv.FormatUint(a.Size, 10)
	if w.f.human {
		size = humanBytes(a.Size)
	}
	if target != "" {
		name += " -> " + target
	}
	fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", modeString(a.Mode), a.Nlink, size,
		timeOf(a.Mtime).Local().Format("2006-01-02 15:04"), name)
}

// readDirPages reads dir's entries a page (proto.ReadDirEntriesMax) at a
// time and hands each page to fn, until the directory ends or fn returns
// false; the error is ReadDir's.
func readDirPages(ctx context.Context, c *client.Client, dir uint64, fn func([]proto.DirEntry) (more bool)) error {
	for cookie := uint64(0); ; {
		es, err := c.ReadDir(ctx, dir, cookie, proto.ReadDirEntriesMax)
		if err != nil {
			return err
		}
		if !fn(es) || len(es) < proto.ReadDirEntriesMax {
			return nil
		}
		cookie = es[len(es)-1].Cookie
	}
}
