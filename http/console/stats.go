package console

// statsRoutes registers the live template, statistics, code and notification pages.
func (c *Console) statsRoutes(page func(string, pageFunc)) {}
