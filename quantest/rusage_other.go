//go:build !unix

package quantest

import "time"

// cpuTime is unknown on this platform: RunBulk reports 0.
func cpuTime() time.Duration { return 0 }

// maxRSS is unknown on this platform: RunBulk reports 0.
func maxRSS() int64 { return 0 }
