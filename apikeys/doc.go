// Package apikeys makes, lists and revokes service keys (quan.APIKey),
// and authenticates the requests made with them.
package apikeys
