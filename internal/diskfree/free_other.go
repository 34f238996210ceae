//go:build !unix

package diskfree

import "errors"

func free(string) (int64, error) { return 0, errors.New("free space: not known on this system") }

func quota(error) bool { return false }
