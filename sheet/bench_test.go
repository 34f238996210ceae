package sheet

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

var benchFiles struct {
	once sync.Once
	dir  string
	err  error
}

// benchFile returns a generated million-row file of the given format,
// made once per test binary run.
func benchFile(b *testing.B, format GenFormat) string {
	benchFiles.once.Do(func() {
		benchFiles.dir, benchFiles.err = os.MkdirTemp("", "quan-sheet-bench-")
		for _, f := range []GenFormat{GenXLSXInline, GenXLSXShared} {
			if benchFiles.err == nil {
				_, benchFiles.err = GenerateFile(filepath.Join(benchFiles.dir, string(rune('a'+f))+".xlsx"),
					GenOptions{Format: f, Rows: 1_000_000, Seed: 1, DupRate: 0.01, InvalidRate: 0.01})
			}
		}
	})
	if benchFiles.err != nil {
		b.Fatal(benchFiles.err)
	}
	return filepath.Join(benchFiles.dir, string(rune('a'+format))+".xlsx")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchFiles.dir != "" {
		os.RemoveAll(benchFiles.dir)
	}
	os.Exit(code)
}

func benchRead(b *testing.B, format GenFormat) {
	path := benchFile(b, format)
	b.ResetTimer()
	var rows int64
	for b.Loop() {
		n, err := countRows(path)
		if err != nil {
			b.Fatal(err)
		}
		rows += n
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkReadInline reads a million-row inline-string xlsx.
func BenchmarkReadInline(b *testing.B) { benchRead(b, GenXLSXInline) }

// BenchmarkReadShared reads a million-row shared-string xlsx.
func BenchmarkReadShared(b *testing.B) { benchRead(b, GenXLSXShared) }

// countRows reads every row of the xlsx at path with the reader.
func countRows(path string) (int64, error) {
	r, err := Open(path, Options{})
	if err != nil {
		return 0, err
	}
	defer r.Close()
	buf := make([]Row, 5000)
	var n int64
	for {
		k, err := r.Read(buf)
		n += int64(k)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}
