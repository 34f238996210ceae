-- A task's notifications by status (issue 18): its progress counts by
-- channel and status (WHERE source = ? GROUP BY channel, status), read
-- from the index alone, and its failed notifications report, a page at a
-- time in id order (WHERE source = ? AND status = 'failed' AND channel = ?
-- AND id > ?; the rowid ends every index entry). The name says what the
-- report searches for; the counts use all of it.
CREATE INDEX notifications_failed ON notifications (source, status, channel);
