// Package facts keeps what is known of users (level, tags, region,
// orders, attributes), which the templates' rules decide on: put one
// user's facts, import a file of them, and read them for the hot paths
// from a bounded in-process cache whose misses share store reads. The API
// calls them a user's attributes.
package facts
