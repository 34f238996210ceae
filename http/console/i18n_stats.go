package console

// statsMessages are the words of the live template, statistics, code and notification pages.
var statsMessages = map[string]message{}
