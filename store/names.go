package store

import (
	"strings"
	"syscall"

	"ustore/engine"
)

// checkName validates one directory entry name: 1–255 bytes, no '/', no
// NUL, not "." or "..".
func checkName(name string) error {
	switch {
	case name == "":
		return syscall.EINVAL
	case len(name) > engine.NameMax:
		return syscall.ENAMETOOLONG
	case name == "." || name == "..":
		return syscall.EINVAL
	case strings.ContainsAny(name, "/\x00"):
		return syscall.EINVAL
	}
	return nil
}
