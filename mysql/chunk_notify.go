package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
)

// notifyChunk records, in the chunk's transaction, the messages to single
// users that the applied chunk c of a task notifying on notify (the tasks
// column: a comma list) owes, as quan.ChunkNotifications makes them from
// template t, with the contacts on file of the chunk's issued users read
// in the same transaction; it returns the task's broadcasts for the caller
// to record under the task's row lock. The per-user messages of two chunks
// never share a key (the file check leaves each user in one chunk), so
// they go in before the locks, alongside other chunks; every chunk records
// the broadcasts, and two chunks inserting the same key before the locks
// would wait for each other there.
func notifyChunk(ctx context.Context, tx *sql.Tx, c *quan.Chunk, notify string, t *quan.Template) ([]*quan.Notification, error) {
	chs, err := quan.ParseNotifyTypes(notify)
	if err != nil {
		return nil, fmt.Errorf("the task's notify %q: %w", notify, err)
	}
	var contacts map[int64]*quan.Contact
	if quan.NeedsContacts(chs) {
		users := quan.IssuedUsers(c)
		slices.Sort(users) // along the primary key
		if contacts, err = sqlrow.ContactsOf(ctx, tx, users); err != nil {
			return nil, err
		}
	}
	ns := quan.ChunkNotifications(c, chs, t, contacts)
	var broadcasts, users []*quan.Notification
	for _, n := range ns {
		if n.UserID == 0 {
			broadcasts = append(broadcasts, n)
		} else {
			users = append(users, n)
		}
	}
	if _, err := recordNotifications(ctx, tx, c.Now, users); err != nil {
		return nil, err
	}
	return broadcasts, nil
}
