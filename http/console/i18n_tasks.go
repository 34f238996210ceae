package console

// taskMessages are the words of the distribution pages.
var taskMessages = map[string]message{}
