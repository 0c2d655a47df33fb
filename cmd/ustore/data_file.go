package main

// Who may read the data file. The socket's peer check (server/peer_cred.go)
// guards the filesystem only while the bytes under it are out of reach: a
// user who can open the image reads every stored file directly. So the
// data file is created 0600 by whoever creates it (mkfs, serve), and serve
// refuses to start on one that others can read or write
// (docs/design/service.md, "Threat model").

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
)

const (
	// dataFileMode is the mode of a data file mkfs or serve creates, set
	// with fchmod after the create so that no umask widens or narrows it.
	dataFileMode os.FileMode = 0o600
	// dataDirMode is the mode of a data directory mkfs or serve creates
	// (then narrowed by the umask): others may pass through it to the
	// socket inside (whose mode and peer check decide who connects), not
	// list it. The data file's own mode is what keeps its bytes private.
	dataDirMode os.FileMode = 0o711
	// fileOthersRW are the permission bits that let a user other than the
	// owner read or write a regular data file.
	fileOthersRW os.FileMode = 0o066
	// deviceWorldRW are the bits refused on a block device: its group is
	// by convention "disk" (udev's 0660 root:disk), whose members can read
	// every disk of the machine raw already; world access is refused.
	deviceWorldRW os.FileMode = 0o006
)

// errReadableDevice is serve's refusal of a data file others can read.
var errReadableDevice = errors.New("data file readable or writable by others")

// createDataFile creates the missing file at path, exclusively, with
// exactly dataFileMode, and returns its FileInfo; an existing path (or a
// symlink there) is not an error and returns nil.
func createDataFile(path string) (fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, dataFileMode)
	if errors.Is(err, fs.ErrExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err == nil {
		err = f.Chmod(dataFileMode)
	}
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	return fi, nil
}

// removeCreated removes the file createDataFile made, if path still names
// it: a file that replaced it is someone else's.
func removeCreated(path string, created fs.FileInfo) {
	if fi, err := os.Lstat(path); err == nil && os.SameFile(fi, created) {
		os.Remove(path)
	}
}

// othersAccess returns the permission bits of fi that give users other
// than its owner (a regular file) or other than root and the disk group (a
// block device) access to it; zero when there are none.
func othersAccess(fi fs.FileInfo) os.FileMode {
	switch {
	case fi.Mode().IsRegular():
		return fi.Mode().Perm() & fileOthersRW
	case fi.Mode()&fs.ModeDevice != 0 && fi.Mode()&fs.ModeCharDevice == 0:
		return fi.Mode().Perm() & deviceWorldRW
	}
	return 0
}

// checkDataFileMode refuses a data file that others can read or write,
// unless allow (--allow-readable-device), which logs a warning instead.
func checkDataFileMode(path string, fi fs.FileInfo, allow bool, log *slog.Logger) error {
	bits := othersAccess(fi)
	if bits == 0 {
		return nil
	}
	if allow {
		log.Warn("the data file is readable or writable by others, who can read every stored file around the socket's peer check (--allow-readable-device)",
			"device", path, "mode", fmt.Sprintf("%04o", fi.Mode().Perm()))
		return nil
	}
	fix := "chmod 600 " + path
	if !fi.Mode().IsRegular() {
		fix = "chmod o-rw " + path
	}
	return fmt.Errorf("%w: %s is mode %04o, so other users can read every stored file from it: run '%s', or start with --allow-readable-device",
		errReadableDevice, path, fi.Mode().Perm(), fix)
}

// warnReadable tells mkfs's user, before serve would refuse it, that the
// existing file being formatted is open to others.
func warnReadable(path string, w io.Writer) {
	if fi, err := os.Stat(path); err == nil && othersAccess(fi) != 0 {
		fmt.Fprintf(w, "mkfs: note: %s is mode %04o; 'ustore serve' refuses a data file others can read or write: run 'chmod 600 %s'\n",
			path, fi.Mode().Perm(), path)
	}
}
