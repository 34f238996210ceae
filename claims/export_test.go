package claims

import (
	"context"
	"time"
)

// SetPaceClock sets the clock by which s paces the claims it persists
// (PersistRate): now, and sleep, which waits. Call it before s serves.
func SetPaceClock(s *Service, now func() time.Time, sleep func(context.Context, time.Duration) error) {
	s.init()
	s.pace.now, s.pace.sleep = now, sleep
}
