package quan

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Duration is a time.Duration that JSON writes and reads as Go's duration
// text: "24h", "1h30m", "5m". Reading also takes a whole number of
// seconds, as a spreadsheet or a script might send it.
type Duration time.Duration

// String is the shortest text of d: "24h" rather than "24h0m0s".
func (d Duration) String() string {
	s := time.Duration(d).String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// MarshalJSON writes d as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string ("24h") or whole seconds (86400).
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var secs int64
		if err := json.Unmarshal(b, &secs); err != nil {
			return fmt.Errorf("a duration is a string such as \"24h\" or \"90m\", or whole seconds")
		}
		*d = Duration(time.Duration(secs) * time.Second)
		return nil
	}
	if s == "" {
		*d = 0
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration: write it as \"24h\", \"90m\" or \"30s\"", s)
	}
	*d = Duration(v)
	return nil
}
