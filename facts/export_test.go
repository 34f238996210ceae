package facts

// FactsCached returns how many users' facts s's cache holds.
func FactsCached(s *Service) int {
	c := s.facts()
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}
