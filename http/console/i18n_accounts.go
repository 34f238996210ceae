package console

// accountMessages are the words of the account pages.
var accountMessages = map[string]message{}
