-- A task's notifications by status (issue 18): its progress counts by
-- channel and status, read from the index alone, and its failed
-- notifications report, a page at a time in id order (InnoDB ends every
-- secondary index entry with the primary key). See
-- sqlite/migrations/0020_notifications_by_status.sql.
CREATE INDEX notifications_failed ON notifications (source, status, channel);
