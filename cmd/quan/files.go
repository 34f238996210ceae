package main

import (
	"context"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/sheet"
)

// fileLimits bound what a distribution file may hold.
type fileLimits struct {
	MaxRows         int64
	MaxUncompressed int64
}

func (l fileLimits) options(sheetName string) sheet.Options {
	return sheet.Options{Sheet: sheetName, MaxRows: l.MaxRows, MaxUncompressed: l.MaxUncompressed}
}

// openTaskFile opens the file of a task for the distributor.
func (l fileLimits) openTaskFile(ctx context.Context, t *quan.Task) (quan.RowReader, error) {
	return sheet.OpenRows(t.FilePath, l.options(t.Sheet))
}

// checkFile reads the header and the first rows of an upload, so that a
// file that cannot be read is refused at once.
func (l fileLimits) checkFile(ctx context.Context, path, sheetName string) error {
	return sheet.Check(ctx, path, l.options(sheetName))
}

// countRows counts the data rows of a stored file.
func (l fileLimits) countRows(ctx context.Context, path, sheetName string) (int64, error) {
	return sheet.Count(ctx, path, l.options(sheetName))
}
