package main

import (
	"testing"

	"github.com/quanhq/quan/internal/integration"
	"github.com/quanhq/quan/internal/testrig/fault"
)

// TestMain runs the tests, stops the private servers the outage tests
// started (package fault), and says which integration suites skipped for
// want of a service's address (package integration).
func TestMain(m *testing.M) { integration.Main(m, fault.Shutdown) }
