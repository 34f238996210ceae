package http_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/quanhq/quan/internal/integration"
)

// The generators' versions, pinned so that a new release changes nothing
// unseen.
const (
	oapiCodegen       = "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2"
	oapiRuntime       = "github.com/oapi-codegen/runtime@v1.9.0"
	openapiTypescript = "openapi-typescript@7.13.0"
	typescript        = "typescript@5.9.3"
)

// TestOpenAPIClientsGenerate generates the clients a platform would, from
// openapi.json, and checks that they compile and name every operation by
// its operationId: a Go client with oapi-codegen (ListMyCouponsWithResponse,
// its errors typed), TypeScript types with openapi-typescript
// (operations["listMyCoupons"], each documented status typed), compiled
// with tsc. It fetches the generators (Go module proxy, npm registry), so
// it runs only with QUAN_TEST_CLIENTGEN=1, as .ci/run sets.
func TestOpenAPIClientsGenerate(t *testing.T) {
	integration.Need(t, integration.ClientGen)
	spec, err := filepath.Abs("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	ops := documentedOperations(t, spec)

	t.Run("oapi-codegen", func(t *testing.T) {
		dir := t.TempDir()
		writeGenFile(t, dir, "go.mod", "module quanclient\n\ngo 1.26\n")
		writeGenFile(t, dir, "cfg.yaml", "package: quanclient\noutput: client.gen.go\ngenerate:\n  models: true\n  client: true\n")
		runGenerator(t, dir, "go", "run", oapiCodegen, "-config", "cfg.yaml", spec)
		runGenerator(t, dir, "go", "get", oapiRuntime)
		runGenerator(t, dir, "go", "mod", "tidy")
		runGenerator(t, dir, "go", "build", "./...")
		runGenerator(t, dir, "go", "vet", "./...")
		src, err := os.ReadFile(filepath.Join(dir, "client.gen.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			name := strings.ToUpper(op.id[:1]) + op.id[1:]
			method := regexp.MustCompile(`func \(c \*ClientWithResponses\) ` + name + `(WithBody)?WithResponse\(`)
			if !method.Match(src) {
				t.Errorf("%s (%s): the Go client has no method %sWithResponse", op.id, op.route, name)
			}
		}
	})

	t.Run("openapi-typescript", func(t *testing.T) {
		dir := t.TempDir()
		runGenerator(t, dir, "npx", "--yes", openapiTypescript, spec, "-o", filepath.Join(dir, "quan.d.ts"))
		// One type per documented answer of each operation: tsc fails if
		// an operation or one of its statuses is not in the types.
		var check strings.Builder
		check.WriteString("import type { operations } from \"./quan\";\n\nexport type Answers = [\n")
		for _, op := range ops {
			for _, status := range op.statuses {
				fmt.Fprintf(&check, "\toperations[%q][\"responses\"][%s],\n", op.id, status)
			}
		}
		check.WriteString("];\n")
		writeGenFile(t, dir, "check.ts", check.String())
		runGenerator(t, dir, "npx", "--yes", "-p", typescript, "tsc", "--noEmit", "--strict", "check.ts")
	})
}

type documentedOperation struct {
	id, route string
	statuses  []string
}

// documentedOperations returns the operations of the OpenAPI document at
// path, by operationId.
func documentedOperations(t *testing.T, path string) []documentedOperation {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var ops []documentedOperation
	for path, item := range doc.Paths {
		for method, raw := range item {
			if method == "parameters" {
				continue
			}
			var op struct {
				OperationID string                     `json:"operationId"`
				Responses   map[string]json.RawMessage `json:"responses"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			if op.OperationID == "" {
				t.Fatalf("%s %s has no operationId", method, path)
			}
			d := documentedOperation{id: op.OperationID, route: strings.ToUpper(method) + " " + path}
			for status := range op.Responses {
				d.statuses = append(d.statuses, status)
			}
			slices.Sort(d.statuses)
			ops = append(ops, d)
		}
	}
	slices.SortFunc(ops, func(a, b documentedOperation) int { return strings.Compare(a.id, b.id) })
	return ops
}

func writeGenFile(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runGenerator runs a command in dir, outside the module (GOWORK off), and fails t
// with its output if it fails.
func runGenerator(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-buildvcs=false", "NO_UPDATE_NOTIFIER=1", "npm_config_fund=false", "npm_config_audit=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}
