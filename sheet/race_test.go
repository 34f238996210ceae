//go:build race

package sheet

// raceEnabled shrinks the large tests: the race detector slows excelize
// tenfold, and the concurrency under test does not depend on file size.
const raceEnabled = true
