package main

// serve's flags from the environment: every flag of `ustore serve` can be
// set by a variable USTORE_<FLAG> (the flag's name in capitals, '-' as
// '_'), so that a systemd unit's Environment= and EnvironmentFile= lines
// configure the service (contrib/systemd/). A flag on the command line wins
// over its variable; a variable wins over the flag's default.

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// serveEnvPrefix starts the name of each of serve's variables. It is also
// the client commands' prefix: USTORE_SOCKET names the socket for both.
const serveEnvPrefix = "USTORE_"

// flagEnvName is the variable that sets flag name: inflight-size →
// USTORE_INFLIGHT_SIZE.
func flagEnvName(name string) string {
	return serveEnvPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// withFlagEnv runs run after setting serve's flags from their variables
// (applyFlagEnv); a usage error that names a flag set from a variable then
// names the variable too (blameFlagEnv), since the command line the user
// reads does not show that flag.
func withFlagEnv(run func(cmd *cobra.Command, args []string) error) func(cmd *cobra.Command, args []string) error {
	return func(cmd *cobra.Command, args []string) error {
		fromEnv, err := applyFlagEnv(cmd.Flags(), os.LookupEnv)
		if err != nil {
			return err
		}
		return blameFlagEnv(run(cmd, args), fromEnv)
	}
}

// applyFlagEnv sets each flag of fs not given on the command line from its
// variable, when that is set (an empty value sets the flag to empty: a
// variable that is set is used), and returns the flags it set, with their
// variables. A value the flag refuses is a usage error naming the
// variable, as a bad flag names the flag. Flags are visited in name
// order, so the first bad variable reported is always the same one.
func applyFlagEnv(fs *pflag.FlagSet, lookup func(string) (string, bool)) (fromEnv map[string]string, err error) {
	var flags []*pflag.Flag
	fs.VisitAll(func(f *pflag.Flag) { flags = append(flags, f) })
	sort.Slice(flags, func(i, j int) bool { return flags[i].Name < flags[j].Name })
	fromEnv = map[string]string{}
	for _, f := range flags {
		if f.Changed || f.Name == "help" {
			continue
		}
		env := flagEnvName(f.Name)
		v, ok := lookup(env)
		if !ok {
			continue
		}
		if err := fs.Set(f.Name, v); err != nil {
			return nil, usageError{fmt.Errorf("$%s=%q (--%s): %w", env, v, f.Name, err)}
		}
		fromEnv[f.Name] = env
	}
	return fromEnv, nil
}

// blameFlagEnv adds "(set by $VAR)" to a usage error that names a flag set
// from a variable: serve checks most values (sizes, modes, ids, bounds)
// after parsing, in messages that name the flag.
func blameFlagEnv(err error, fromEnv map[string]string) error {
	if err == nil || !isUsage(err) || len(fromEnv) == 0 {
		return err
	}
	msg := err.Error()
	var vars []string
	for name, env := range fromEnv {
		if mentionsFlag(msg, name) {
			vars = append(vars, "$"+env)
		}
	}
	if len(vars) == 0 {
		return err
	}
	sort.Strings(vars)
	return usageError{fmt.Errorf("%w (set by %s)", err, strings.Join(vars, ", "))}
}

// mentionsFlag says whether msg names --name as a whole flag: --socket is
// not in "--socket-mode".
func mentionsFlag(msg, name string) bool {
	flag := "--" + name
	for i := 0; ; {
		j := strings.Index(msg[i:], flag)
		if j < 0 {
			return false
		}
		end := i + j + len(flag)
		if end == len(msg) || !(msg[end] == '-' || msg[end] >= 'a' && msg[end] <= 'z') {
			return true
		}
		i = end
	}
}

// serveEnvHelp is the paragraph of serve's --help on its variables.
const serveEnvHelp = `Every flag can also be set by an environment variable, ` + serveEnvPrefix + ` and the flag's
name in capitals with '-' as '_': USTORE_DEVICE, USTORE_INFLIGHT_SIZE=512M,
USTORE_ALLOW_GID=ustore,wheel, USTORE_READ_ONLY=true. A flag on the command
line wins over its variable, a variable over the default; a value the flag
would refuse is an error naming the variable. contrib/systemd/ustore.service
configures serve this way (Environment=, EnvironmentFile=).`
