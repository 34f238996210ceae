// Package tasks runs bulk distributions (发券任务): a merchant uploads a
// file of users or names a segment (Service), and a Runner claims the
// task, reads it in chunks, reserves in the cache and applies each chunk
// in one store transaction, exactly once across crashes, with progress,
// a failure report per row and the notifications each chunk owes.
package tasks
