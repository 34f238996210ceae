package report

// NoSpace is noSpace, for the tests.
var NoSpace = noSpace
