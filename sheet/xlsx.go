package sheet

import (
	"archive/zip"
	"bufio"
	"encoding/xml"
	"errors"
	"fmt"
	"github.com/klauspost/compress/flate"
	"hash/crc32"
	"io"
	"path"
	"strings"
	"sync/atomic"
)

// maxSmallPart bounds the inflated size of the parts read with
// encoding/xml (relationships, workbook).
const maxSmallPart = 32 << 20

type archive struct {
	files map[string]*zip.File // by lower-case name
	opt   Options
}

func (a *archive) file(name string) *zip.File {
	return a.files[strings.ToLower(strings.TrimPrefix(name, "/"))]
}

// openXLSX resolves the worksheet to read, loads the shared strings and
// starts streaming the worksheet up to its header row.
func openXLSX(ra io.ReaderAt, size int64, opt Options, read *atomic.Int64) (source, int64, error) {
	zr, err := zip.NewReader(ra, size)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: the archive is truncated or damaged (%v): save it again from Excel, or as .csv", ErrTruncated, err)
	}
	a := &archive{files: make(map[string]*zip.File, len(zr.File)), opt: opt}
	for _, f := range zr.File {
		a.files[strings.ToLower(strings.TrimPrefix(f.Name, "/"))] = f
	}
	wbPath := a.officeDocument()
	wb := a.file(wbPath)
	if wb == nil {
		return nil, 0, fmt.Errorf("open xlsx: %w: zip archive without xl/workbook.xml", ErrNotSpreadsheet)
	}
	sheets, sstPath, err := a.workbook(wbPath)
	if err != nil {
		return nil, 0, err
	}
	var ws *zip.File
	var names []string
	for _, s := range sheets {
		if !s.worksheet {
			continue
		}
		names = append(names, fmt.Sprintf("%q", s.name))
		if ws == nil && (opt.Sheet == "" || opt.Sheet == s.name) {
			ws = a.file(s.part)
			if ws == nil {
				return nil, 0, fmt.Errorf("open xlsx: %w: worksheet %q (%s) is missing from the archive",
					ErrTruncated, s.name, s.part)
			}
		}
	}
	switch {
	case len(names) == 0:
		return nil, 0, fmt.Errorf("open xlsx: %w", ErrNoWorksheet)
	case ws == nil:
		return nil, 0, fmt.Errorf("open xlsx: %w: no sheet named %q; the workbook has %s",
			ErrSheetNotFound, opt.Sheet, strings.Join(names, ", "))
	}
	total := int64(ws.CompressedSize64)
	var sf *zip.File
	if sstPath != "" {
		sf = a.file(sstPath)
	}
	if sf != nil {
		total += int64(sf.CompressedSize64)
	}
	x := &xlsxSource{maxRows: opt.MaxRows, x: &xscan{}, withOthers: opt.Others}
	if sf != nil {
		src, err := a.part(sf, read)
		if err != nil {
			return nil, 0, err
		}
		if x.sst, err = readSST(src, int64(sf.UncompressedSize64), opt.MaxSharedStrings); err != nil {
			return nil, 0, fmt.Errorf("open xlsx: %w", err)
		}
	}
	src, err := a.part(ws, read)
	if err != nil {
		return nil, 0, err
	}
	x.s = newStream(src, int64(ws.UncompressedSize64))
	if err := x.readHeader(); err != nil {
		x.close()
		return nil, 0, fmt.Errorf("open xlsx: %w", err)
	}
	return x, total, nil
}

type relationship struct {
	ID     string `xml:"Id,attr"`
	Type   string `xml:"Type,attr"`
	Target string `xml:"Target,attr"`
	Mode   string `xml:"TargetMode,attr"`
}

// rels reads the relationships of part, resolving targets to part names.
func (a *archive) rels(part string) ([]relationship, error) {
	dir, base := path.Split(part)
	relPath := dir + "_rels/" + base + ".rels"
	f := a.file(relPath)
	if f == nil {
		return nil, nil
	}
	var v struct {
		Rels []relationship `xml:"Relationship"`
	}
	if err := a.decodeSmall(f, &v); err != nil {
		return nil, err
	}
	for i, r := range v.Rels {
		if strings.HasPrefix(r.Target, "/") {
			v.Rels[i].Target = strings.TrimPrefix(r.Target, "/")
		} else {
			v.Rels[i].Target = path.Join(dir, r.Target)
		}
	}
	return v.Rels, nil
}

func (a *archive) officeDocument() string {
	rels, _ := a.rels("")
	for _, r := range rels {
		if strings.HasSuffix(r.Type, "/officeDocument") && a.file(r.Target) != nil {
			return r.Target
		}
	}
	return "xl/workbook.xml"
}

type sheetRef struct {
	name, part string
	worksheet  bool
}

// workbook lists the sheets in workbook order and finds the shared strings.
func (a *archive) workbook(wbPath string) ([]sheetRef, string, error) {
	var wb struct {
		Sheets []struct {
			Name  string     `xml:"name,attr"`
			Attrs []xml.Attr `xml:",any,attr"`
		} `xml:"sheets>sheet"`
	}
	if err := a.decodeSmall(a.file(wbPath), &wb); err != nil {
		return nil, "", err
	}
	rels, err := a.rels(wbPath)
	if err != nil {
		return nil, "", err
	}
	byID := make(map[string]relationship, len(rels))
	sst := ""
	for _, r := range rels {
		byID[r.ID] = r
		if strings.HasSuffix(r.Type, "/sharedStrings") {
			sst = r.Target
		}
	}
	if sst == "" && a.file("xl/sharedStrings.xml") != nil {
		sst = "xl/sharedStrings.xml"
	}
	var out []sheetRef
	for i, s := range wb.Sheets {
		var id string
		for _, at := range s.Attrs {
			if at.Name.Local == "id" {
				id = at.Value
			}
		}
		ref := sheetRef{name: s.Name}
		if r, ok := byID[id]; ok {
			ref.part = r.Target
			ref.worksheet = strings.HasSuffix(r.Type, "/worksheet")
		} else if rels == nil {
			// No workbook relationships: fall back to the conventional
			// part names, as lenient readers do.
			ref.part = fmt.Sprintf("xl/worksheets/sheet%d.xml", i+1)
			ref.worksheet = a.file(ref.part) != nil
		}
		out = append(out, ref)
	}
	return out, sst, nil
}

func (a *archive) decodeSmall(f *zip.File, v any) error {
	if f.UncompressedSize64 > maxSmallPart {
		return fmt.Errorf("open xlsx: %w: %s is larger than %d bytes", ErrTooLong, f.Name, maxSmallPart)
	}
	rc, err := a.part(f, new(atomic.Int64))
	if err != nil {
		return err
	}
	d := xml.NewDecoder(rc)
	d.Strict = false
	if err := d.Decode(v); err != nil {
		switch {
		case errors.Is(err, ErrZipBomb), errors.Is(err, ErrTruncated):
			return fmt.Errorf("open xlsx: %s: %w", f.Name, err)
		}
		return fmt.Errorf("open xlsx: %w: %s: %v", ErrMalformed, f.Name, err)
	}
	return nil
}

// part opens the inflated content of f, guarding against zip bombs and
// checking size and CRC at the end, and counts compressed bytes in read.
func (a *archive) part(f *zip.File, read *atomic.Int64) (io.Reader, error) {
	limit := a.opt.MaxUncompressed
	if f.Flags&1 != 0 {
		return nil, fmt.Errorf("open xlsx: %w: %s is encrypted", ErrNotSpreadsheet, f.Name)
	}
	if int64(f.UncompressedSize64) > limit || f.UncompressedSize64 > 1<<62 {
		return nil, fmt.Errorf("open xlsx: %w: %s inflates to %d bytes, over the limit of %d",
			ErrZipBomb, f.Name, f.UncompressedSize64, limit)
	}
	if f.UncompressedSize64 > ratioFloor && f.UncompressedSize64/max(f.CompressedSize64, 1) > MaxCompressionRatio {
		return nil, fmt.Errorf("open xlsx: %w: %s compresses %d:1, above %d:1",
			ErrZipBomb, f.Name, f.UncompressedSize64/max(f.CompressedSize64, 1), MaxCompressionRatio)
	}
	raw, err := f.OpenRaw()
	if err != nil {
		return nil, fmt.Errorf("open xlsx: %w: %s: %v", ErrTruncated, f.Name, err)
	}
	cr := &countingReader{r: raw, n: read}
	var r io.Reader
	switch f.Method {
	case zip.Store:
		r = cr
	case zip.Deflate:
		r = flate.NewReader(bufio.NewReaderSize(cr, 64<<10))
	default:
		return nil, fmt.Errorf("open xlsx: %w: %s uses unsupported compression method %d",
			ErrNotSpreadsheet, f.Name, f.Method)
	}
	return &checkedReader{r: r, f: f, limit: limit, counted: cr}, nil
}

const ratioFloor = 4 << 20

// checkedReader enforces the inflated size limits while streaming (the
// sizes in the zip headers may lie) and checks size and CRC at the end.
type checkedReader struct {
	r       io.Reader
	f       *zip.File
	limit   int64
	n       int64
	crc     uint32
	counted *countingReader
	compN   int64
}

func (c *checkedReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	c.compN += 0
	c.crc = crc32.Update(c.crc, crc32.IEEETable, p[:n])
	name := c.f.Name
	switch {
	case c.n > c.limit:
		return n, fmt.Errorf("%w: %s inflates to more than %d bytes", ErrZipBomb, name, c.limit)
	case uint64(c.n) > c.f.UncompressedSize64:
		return n, fmt.Errorf("%w: %s is longer than its zip header says", ErrTruncated, name)
	}
	if err == io.EOF {
		if uint64(c.n) != c.f.UncompressedSize64 {
			return n, fmt.Errorf("%w: %s is shorter than its zip header says", ErrTruncated, name)
		}
		if c.f.CRC32 != 0 && c.crc != c.f.CRC32 {
			return n, fmt.Errorf("%w: %s fails its checksum", ErrTruncated, name)
		}
		return n, io.EOF
	}
	if err != nil {
		return n, fmt.Errorf("%w: %s: %v", ErrTruncated, name, err)
	}
	return n, nil
}
