package bench

import (
	"testing"

	"github.com/quanhq/quan/internal/integration"
)

// TestMain runs the tests and says which integration suites skipped for
// want of a service's address (package integration).
func TestMain(m *testing.M) { integration.Main(m) }
