//go:build !unix

package bench

import "os"

// maxRSS is unknown on this platform: Bench reports 0.
func maxRSS(*os.ProcessState) int64 { return 0 }
