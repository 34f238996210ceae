package console

// LivePollers returns how many pollers the live template pages run: one
// per template watched, however many watch it.
func LivePollers(c *Console) int { return c.stats.live.Pollers() }
