package sheet

import (
	"archive/zip"
	"bufio"
	"compress/flate"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
	"os"
	"strconv"

	"golang.org/x/text/encoding/simplifiedchinese"
)

// GenFormat selects the file kind Generate writes.
type GenFormat int

const (
	// GenXLSXInline writes an .xlsx whose cells are inline strings, as
	// streaming writers (excelize's StreamWriter among them) do.
	GenXLSXInline GenFormat = iota
	// GenXLSXShared writes an .xlsx whose cells point into a shared string
	// table, as Excel itself does.
	GenXLSXShared
	// GenCSV writes UTF-8 CSV with CRLF line ends.
	GenCSV
	// GenCSVGBK writes GBK CSV with a Chinese header, as Excel on Chinese
	// Windows does.
	GenCSVGBK
)

// GenOptions describes a generated file of fake target users.
type GenOptions struct {
	Format GenFormat
	// Rows is the number of data rows (header excluded).
	Rows int
	// Seed makes the output deterministic: equal options, equal bytes.
	Seed uint64
	// DupRate is the share (0..1) of rows repeating an earlier user.
	DupRate float64
	// InvalidRate is the share (0..1) of rows with an invalid user id:
	// empty, "abc" or 20 digits, in turn at random.
	InvalidRate float64
	// Names adds a fourth column 姓名 (name) of Chinese names, which
	// readers must ignore.
	Names bool
	// ChineseHeader writes 用户ID, 手机号, 邮箱 instead of userId, phone,
	// mail; GenCSVGBK always does.
	ChineseHeader bool
	// Sheet names the worksheet; "" means "Sheet1".
	Sheet string
}

// GenStats counts what Generate wrote.
type GenStats struct {
	Rows       int // data rows
	Unique     int // distinct valid user ids
	Duplicates int // rows repeating an earlier valid user
	Invalid    int // rows with an invalid user id
}

// GenerateFile writes Generate's output to a new file at path.
func GenerateFile(path string, opt GenOptions) (GenStats, error) {
	f, err := os.Create(path)
	if err != nil {
		return GenStats{}, fmt.Errorf("generate: %w", err)
	}
	st, err := Generate(f, opt)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("generate: %w", cerr)
	}
	return st, err
}

// Generate writes a file of fake target users: unique random-looking
// 19-digit user ids stored as text, Chinese mobile numbers and mail
// addresses, with the requested shares of duplicate and invalid rows. A
// million rows take a few seconds.
func Generate(w io.Writer, opt GenOptions) (GenStats, error) {
	if opt.Rows < 0 || opt.DupRate < 0 || opt.InvalidRate < 0 || opt.DupRate+opt.InvalidRate > 1 {
		return GenStats{}, fmt.Errorf("generate: bad options: rows %d, dup rate %g, invalid rate %g",
			opt.Rows, opt.DupRate, opt.InvalidRate)
	}
	g := newGen(opt)
	var err error
	switch opt.Format {
	case GenXLSXInline, GenXLSXShared:
		err = g.writeXLSX(w)
	case GenCSV, GenCSVGBK:
		err = g.writeCSV(w)
	default:
		err = fmt.Errorf("unknown format %d", opt.Format)
	}
	if err != nil {
		return GenStats{}, fmt.Errorf("generate: %w", err)
	}
	return g.stats, nil
}

type genRowKind uint8

const (
	genValid genRowKind = iota
	genDup
	genEmptyID
	genAlphaID
	genLongID
)

type gen struct {
	opt   GenOptions
	mulA  uint64 // id permutation: (mulA*u + addC) mod idSpan
	addC  uint64
	stats GenStats
	buf   []byte

	sstRefs, sstUnique int // shared string cells and entries
}

// idSpan keeps ids at 19 digits below 9e18, inside int64 as user ids are
// everywhere (snowflake-style), so a generated id is always a valid one.
const idSpan = 8_000_000_000_000_000_000 // 1e18 + [0, 8e18)

func newGen(opt GenOptions) *gen {
	r := rand.New(rand.NewPCG(opt.Seed, 0x5eed))
	a := r.Uint64N(idSpan) | 1
	for a%3 == 0 || a%5 == 0 {
		a += 2
	}
	return &gen{opt: opt, mulA: a, addC: r.Uint64N(idSpan)}
}

// each calls fn for every row in order, the same way on every call: kind,
// and the user ordinal whose values the row carries.
func (g *gen) each(fn func(kind genRowKind, u int) error) error {
	r := rand.New(rand.NewPCG(g.opt.Seed, 0x9e3779b97f4a7c15))
	users := 0
	for i := range g.opt.Rows {
		p := r.Float64()
		switch {
		case p < g.opt.DupRate && users > 0:
			if err := fn(genDup, r.IntN(users)); err != nil {
				return err
			}
		case p < g.opt.DupRate+g.opt.InvalidRate:
			if err := fn(genEmptyID+genRowKind(r.IntN(3)), g.opt.Rows+i); err != nil {
				return err
			}
		default:
			if err := fn(genValid, users); err != nil {
				return err
			}
			users++
		}
	}
	return nil
}

func (g *gen) count(kind genRowKind) {
	g.stats.Rows++
	switch kind {
	case genValid:
		g.stats.Unique++
	case genDup:
		g.stats.Duplicates++
	default:
		g.stats.Invalid++
	}
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// appendID appends the user id of the row, "" for an empty one.
func (g *gen) appendID(b []byte, kind genRowKind, u int) []byte {
	switch kind {
	case genEmptyID:
		return b
	case genAlphaID:
		return append(b, "abc"...)
	case genLongID:
		b = append(b, '1')
		return strconv.AppendUint(b, 1e18+splitmix(uint64(u))%idSpan, 10)
	}
	hi, lo := bits.Mul64(g.mulA, uint64(u))
	_, rem := bits.Div64(hi, lo, idSpan)
	return strconv.AppendUint(b, 1e18+(rem+g.addC)%idSpan, 10)
}

func (g *gen) appendPhone(b []byte, u int) []byte {
	h := splitmix(uint64(u) ^ g.opt.Seed<<1)
	b = append(b, '1', byte('3'+h%7))
	return strconv.AppendUint(b, 100_000_000+(h>>8)%900_000_000, 10)
}

var mailDomains = []string{"qq.com", "163.com", "126.com", "gmail.com", "sina.com", "outlook.com", "foxmail.com"}

func (g *gen) appendMail(b []byte, u int) []byte {
	h := splitmix(uint64(u) ^ g.opt.Seed<<2 ^ 0xa5a5)
	b = append(b, "user."...)
	b = strconv.AppendUint(b, h>>20, 36)
	b = append(b, '@')
	return append(b, mailDomains[h%uint64(len(mailDomains))]...)
}

var (
	surnames = []string{"王", "李", "张", "刘", "陈", "杨", "黄", "赵", "吴", "周", "欧阳"}
	given    = []string{"伟", "芳", "娜", "秀英", "敏", "静", "丽", "强", "磊", "军", "洋", "勇", "艳", "杰", "涛"}
)

func (g *gen) appendName(b []byte, u int) []byte {
	h := splitmix(uint64(u) ^ 0x77)
	b = append(b, surnames[h%uint64(len(surnames))]...)
	return append(b, given[(h>>8)%uint64(len(given))]...)
}

func (g *gen) header() []string {
	h := []string{"userId", "phone", "mail", "name"}
	if g.opt.ChineseHeader || g.opt.Format == GenCSVGBK {
		h = []string{"用户ID", "手机号", "邮箱", "姓名"}
	}
	if !g.opt.Names {
		h = h[:3]
	}
	return h
}

func (g *gen) writeCSV(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	var out io.Writer = bw
	var enc io.Writer
	if g.opt.Format == GenCSVGBK {
		enc = simplifiedchinese.GBK.NewEncoder().Writer(bw)
	}
	b := g.buf[:0]
	for i, h := range g.header() {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, h...)
	}
	b = append(b, "\r\n"...)
	err := g.each(func(kind genRowKind, u int) error {
		g.count(kind)
		b = g.appendID(b, kind, u)
		b = append(b, ',')
		b = g.appendPhone(b, u)
		b = append(b, ',')
		b = g.appendMail(b, u)
		if g.opt.Names {
			b = append(b, ',')
			b = g.appendName(b, u)
		}
		b = append(b, "\r\n"...)
		if len(b) >= 32<<10 {
			if err := g.flushCSV(out, enc, b); err != nil {
				return err
			}
			b = b[:0]
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := g.flushCSV(out, enc, b); err != nil {
		return err
	}
	return bw.Flush()
}

func (g *gen) flushCSV(out, enc io.Writer, b []byte) error {
	if enc != nil {
		_, err := enc.Write(b)
		return err
	}
	_, err := out.Write(b)
	return err
}

const (
	ctXML  = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` + "\n"
	nsMain = `http://schemas.openxmlformats.org/spreadsheetml/2006/main`
	nsRel  = `http://schemas.openxmlformats.org/officeDocument/2006/relationships`
	nsPkg  = `http://schemas.openxmlformats.org/package/2006/relationships`
)

func (g *gen) writeXLSX(w io.Writer) error {
	shared := g.opt.Format == GenXLSXShared
	zw := zip.NewWriter(w)
	zw.RegisterCompressor(zip.Deflate, func(out io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(out, flate.BestSpeed)
	})
	sheetName := g.opt.Sheet
	if sheetName == "" {
		sheetName = "Sheet1"
	}
	sstCT, sstRel := "", ""
	if shared {
		sstCT = `<Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/>`
		sstRel = `<Relationship Id="rId3" Type="` + nsRel + `/sharedStrings" Target="sharedStrings.xml"/>`
	}
	parts := []struct{ name, body string }{
		{"[Content_Types].xml", ctXML + `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
			`<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>` +
			`<Default Extension="xml" ContentType="application/xml"/>` +
			`<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>` +
			`<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>` +
			sstCT + `</Types>`},
		{"_rels/.rels", ctXML + `<Relationships xmlns="` + nsPkg + `">` +
			`<Relationship Id="rId1" Type="` + nsRel + `/officeDocument" Target="xl/workbook.xml"/></Relationships>`},
		{"xl/workbook.xml", ctXML + `<workbook xmlns="` + nsMain + `" xmlns:r="` + nsRel + `"><sheets>` +
			`<sheet name="` + xmlEscape(sheetName) + `" sheetId="1" r:id="rId1"/></sheets></workbook>`},
		{"xl/_rels/workbook.xml.rels", ctXML + `<Relationships xmlns="` + nsPkg + `">` +
			`<Relationship Id="rId1" Type="` + nsRel + `/worksheet" Target="worksheets/sheet1.xml"/>` +
			sstRel + `</Relationships>`},
	}
	for _, p := range parts {
		pw, err := zw.Create(p.name)
		if err != nil {
			return err
		}
		if _, err := io.WriteString(pw, p.body); err != nil {
			return err
		}
	}
	pw, err := zw.Create("xl/worksheets/sheet1.xml")
	if err != nil {
		return err
	}
	if err := g.writeSheet(pw, shared); err != nil {
		return err
	}
	if shared {
		pw, err := zw.Create("xl/sharedStrings.xml")
		if err != nil {
			return err
		}
		if err := g.writeSST(pw); err != nil {
			return err
		}
	}
	return zw.Close()
}

func xmlEscape(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '&':
			b = append(b, "&amp;"...)
		case '<':
			b = append(b, "&lt;"...)
		case '>':
			b = append(b, "&gt;"...)
		case '"':
			b = append(b, "&quot;"...)
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

// writeSheet writes the worksheet. With shared strings, every new row
// appends its strings to the table in order and a duplicate points at the
// first occurrence's entries, as Excel would.
func (g *gen) writeSheet(w io.Writer, shared bool) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	hdr := g.header()
	cols := "C"
	if g.opt.Names {
		cols = "D"
	}
	bw.WriteString(ctXML + `<worksheet xmlns="` + nsMain + `" xmlns:r="` + nsRel + `"><dimension ref="A1:` +
		cols + strconv.Itoa(g.opt.Rows+1) + `"/><sheetData>`)
	b := g.buf[:0]
	var base []uint32 // first shared string of each valid user
	next := uint32(0)
	if shared {
		base = make([]uint32, 0, g.opt.Rows)
	}
	cell := func(b []byte, col byte, row int, v []byte) []byte {
		b = append(b, `<c r="`...)
		b = append(b, col)
		b = strconv.AppendInt(b, int64(row), 10)
		if shared {
			b = append(b, `" t="s"><v>`...)
			b = strconv.AppendUint(b, uint64(next), 10)
			next++
			g.sstRefs++
			return append(b, `</v></c>`...)
		}
		b = append(b, `" t="inlineStr"><is><t>`...)
		b = append(b, v...)
		return append(b, `</t></is></c>`...)
	}
	b = append(b, `<row r="1">`...)
	for i, h := range hdr {
		b = cell(b, byte('A'+i), 1, []byte(h))
	}
	b = append(b, `</row>`...)
	row := 1
	var v []byte
	err := g.each(func(kind genRowKind, u int) error {
		g.count(kind)
		row++
		b = append(b, `<row r="`...)
		b = strconv.AppendInt(b, int64(row), 10)
		b = append(b, `">`...)
		if shared && kind == genDup {
			for i := range len(hdr) {
				b = append(b, `<c r="`...)
				b = append(b, byte('A'+i))
				b = strconv.AppendInt(b, int64(row), 10)
				b = append(b, `" t="s"><v>`...)
				b = strconv.AppendUint(b, uint64(base[u])+uint64(i), 10)
				b = append(b, `</v></c>`...)
				g.sstRefs++
			}
		} else {
			if shared && kind == genValid {
				base = append(base, next)
			}
			if v = g.appendID(v[:0], kind, u); len(v) > 0 {
				b = cell(b, 'A', row, v)
			}
			b = cell(b, 'B', row, g.appendPhone(v[:0], u))
			b = cell(b, 'C', row, g.appendMail(v[:0], u))
			if g.opt.Names {
				b = cell(b, 'D', row, g.appendName(v[:0], u))
			}
		}
		b = append(b, `</row>`...)
		if len(b) >= 32<<10 {
			if _, err := bw.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
		return nil
	})
	if err != nil {
		return err
	}
	g.sstUnique = int(next)
	b = append(b, `</sheetData></worksheet>`...)
	if _, err := bw.Write(b); err != nil {
		return err
	}
	g.buf = b[:0]
	return bw.Flush()
}

// writeSST writes the shared strings in the order writeSheet numbered
// them, replaying the same rows.
func (g *gen) writeSST(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	hdr := g.header()
	bw.WriteString(ctXML + `<sst xmlns="` + nsMain + `" count="` + strconv.Itoa(g.sstRefs) +
		`" uniqueCount="` + strconv.Itoa(g.sstUnique) + `">`)
	b := g.buf[:0]
	item := func(b, v []byte) []byte {
		b = append(b, `<si><t>`...)
		b = append(b, v...)
		return append(b, `</t></si>`...)
	}
	for _, h := range hdr {
		b = item(b, []byte(h))
	}
	saved := g.stats
	var v []byte
	err := g.each(func(kind genRowKind, u int) error {
		if kind == genDup {
			return nil
		}
		if v = g.appendID(v[:0], kind, u); len(v) > 0 {
			b = item(b, v)
		}
		b = item(b, g.appendPhone(v[:0], u))
		b = item(b, g.appendMail(v[:0], u))
		if g.opt.Names {
			b = item(b, g.appendName(v[:0], u))
		}
		if len(b) >= 32<<10 {
			if _, err := bw.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
		return nil
	})
	g.stats = saved
	if err != nil {
		return err
	}
	b = append(b, `</sst>`...)
	if _, err := bw.Write(b); err != nil {
		return err
	}
	return bw.Flush()
}
