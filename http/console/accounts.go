package console

// accountRoutes registers the account pages.
func (c *Console) accountRoutes(page func(string, pageFunc)) {}
