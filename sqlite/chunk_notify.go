package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
)

// notifyChunk records, in the chunk's transaction, the notifications that
// the applied chunk c of a task notifying on notify (the tasks column: a
// comma list) owes, as quan.ChunkNotifications makes them from template
// t: the task's broadcasts and one message per issued row for email and
// SMS, with the contacts on file of the chunk's issued users read in the
// same transaction. The chunk ledger keeps a chunk from being applied
// twice, and the notifications' key keeps the broadcasts, which every
// chunk records, once.
func notifyChunk(ctx context.Context, tx *sql.Tx, c *quan.Chunk, notify string, t *quan.Template) error {
	if notify == "" {
		return nil
	}
	chs, err := quan.ParseNotifyTypes(notify)
	if err != nil {
		return fmt.Errorf("the task's notify %q: %w", notify, err)
	}
	var contacts map[int64]*quan.Contact
	if quan.NeedsContacts(chs) {
		users := quan.IssuedUsers(c)
		if len(users) == 0 {
			return nil
		}
		slices.Sort(users) // along the primary key
		if contacts, err = sqlrow.ContactsOf(ctx, tx, users); err != nil {
			return err
		}
	}
	_, err = recordNotifications(ctx, tx, c.Now, quan.ChunkNotifications(c, chs, t, contacts))
	return err
}
