package console

// taskRoutes registers the distribution pages.
func (c *Console) taskRoutes(page func(string, pageFunc)) {}
