//go:build unix

package diskfree

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

func free(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

func quota(err error) bool { return errors.Is(err, syscall.EDQUOT) }
