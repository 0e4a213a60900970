// Package words says quantities in words for people to read: durations as "1 minute 16
// seconds", never Go's "1m16.2s". It imports the standard library only, so that every
// command — the producer and the worker, built without cgo, as much as the analyzer's reports
// — prints a duration the same way.
package words
