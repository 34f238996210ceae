package sqlrow

import (
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Time returns a scan destination that reads a NOT NULL time column into
// *dst, in UTC, on either engine: SQLite keeps Unix microseconds (an
// INTEGER, read as int64), MySQL a DATETIME(6) that the driver reads as a
// time.Time. A NULL is an error.
func Time(dst *time.Time) sql.Scanner { return timeDest{dst, false} }

// NullTime is Time for a nullable column: NULL reads as the zero time,
// which is how quan says that a time does not apply.
func NullTime(dst *time.Time) sql.Scanner { return timeDest{dst, true} }

type timeDest struct {
	t        *time.Time
	nullable bool
}

// Scan implements sql.Scanner.
func (d timeDest) Scan(v any) error {
	switch v := v.(type) {
	case int64:
		*d.t = time.UnixMicro(v).UTC()
	case time.Time:
		*d.t = v.UTC()
	case nil:
		if !d.nullable {
			return errors.New("NULL in a time column that may not hold it")
		}
		*d.t = time.Time{}
	default:
		return fmt.Errorf("a time column holds %T", v)
	}
	return nil
}

// Null returns what a store writes for t in a nullable time column: NULL
// (nil) for the zero time, else at(t), at being how the store writes an
// instant in a NOT NULL column.
func Null[V any](at func(time.Time) V, t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return at(t)
}
