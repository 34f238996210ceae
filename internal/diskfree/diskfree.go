// Package diskfree tells the room left on a folder's disk, and whether a
// write failed for want of it.
package diskfree

import (
	"errors"
	"syscall"
)

// Full reports whether err is a write refused because the disk, or the
// user's quota on it, is full.
func Full(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || quota(err)
}

// Free returns the bytes an unprivileged process may still write on the
// disk of dir, or -1 when the system cannot tell.
func Free(dir string) int64 {
	n, err := free(dir)
	if err != nil {
		return -1
	}
	return n
}
