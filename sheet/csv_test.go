package sheet

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/unicode"
)

func gbk(t testing.TB, s string) string {
	t.Helper()
	b, err := simplifiedchinese.GBK.NewEncoder().String(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCSV(t *testing.T) {
	t.Parallel()
	utf16, _ := unicode.UTF16(unicode.LittleEndian, unicode.UseBOM).NewEncoder().String("用户ID\t手机号\r\n1\t138\r\n")
	tests := []struct {
		name, data, want string
	}{
		{"OKPlainLF", "userId,phone,mail\n1,138,a@b\n2,139,c@d\n", "2|1|138|a@b\n3|2|139|c@d\n"},
		{"OKCRLFNoFinalNewline", "userId,phone,mail\r\n1,138,a@b\r\n2,139,c@d", "2|1|138|a@b\n3|2|139|c@d\n"},
		{"OKBOM", "\xef\xbb\xbfuserId,mail\n1,a@b\n", "2|1||a@b\n"},
		{"OKChineseUTF8", "姓名,用户ID,手机号,邮箱\n张三,1,138,a@b\n", "2|1|138|a@b\n"},
		{"OKLang", "userId,phone,Language\n1,138,en\n2,139,\n", "2|1|138||lang=en\n3|2|139|\n"},
		{"OKLangChinese", "用户ID,语言\n1,zh\n", "2|1|||lang=zh\n"},
		{"OKMobileEmail", "Mobile,EMAIL,userId\n138,a@b,1\n", "2|1|138|a@b\n"},
		{"OKPhoneBeyond2p53KeepsTheRow", "userId,phone\n1,1.8E+19\n", "2|1|1.8E+19|\n"},
		{"OKGBK", gbk(t, "姓名,用户ID,手机号,邮箱\r\n张三,1,138,a@b\r\n李四,2,139,\r\n"), "2|1|138|a@b\n3|2|139|\n"},
		{"OKGB18030", gbk(t, "用户ID,备注\n1,") + "\x81\x30\x81\x30\n", "2|1||\n"},
		{"OKGBKAfterLongASCII", "userId,name\n" + strings.Repeat("1,x\n", 30000) + gbk(t, "2,王五\n"), ""},
		{"OKQuoted", "userId,phone,mail\n\"1\",\"1,38\",\"say \"\"hi\"\"\"\n", "2|1|1,38|say \"hi\"\n"},
		{"OKQuotedNewlines", "userId,mail\n\"1\n2\",\"a\r\nb\"\n3,c\n", ""},
		{"OKBlankLinesAndRows", "\n\n userId ,mail\n\n,\n  ,  \n5,e\n", "7|5||e\n"},
		{"OKLazyQuotes", "userId,mail\n1\"2,\"a\"b\n", "2|1\"2||ab\n"},
		{"OKShortAndLongRows", "mail,userId,phone\na\nb,2\nc,3,139,extra\n", "2|||a\n3|2||b\n4|3|139|c\n"},
		{"OKTabs", "userId\tphone\n1\t138\n", "2|1|138|\n"},
		{"OKTabsAfterBlankLine", "\r\nuserId\tphone\r\n1\t138\r\n", "3|1|138|\n"},
		{"OKSemicolons", "userId;phone\n1;138\n", "2|1|138|\n"},
		{"OKUTF16", utf16, "2|1|138|\n"},
		{"OKScientificId", "userId\n1.23457E+18\n1E3\n", "2|1.23457E+18|||ERR:inexact\n3|1E3||\n"},
		{"OKFailureReport", "行号 Row,用户ID User ID,原因 Reason,代码 Code,说明 Details\n3,1234567890123456789,库存不足 out of stock,out_of_stock,out of stock\n" +
			"4,1.2345678901234568E+18,数字精度丢失 number lost its digits,inexact_number,x\n", "2|1234567890123456789||\n3|1.2345678901234568E+18|||ERR:inexact\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rows, err := readAll(t, []byte(tt.data), "users.csv", Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := rowsString(rows)
			if tt.name == "OKGBKAfterLongASCII" {
				if len(rows) != 30001 || rows[30000].UserID != "2" || rows[30000].Line != 30002 {
					t.Fatalf("got %d rows, last %+v", len(rows), rows[len(rows)-1])
				}
				return
			}
			if tt.name == "OKQuotedNewlines" {
				if len(rows) != 2 || rows[0].UserID != "1\n2" || rows[0].Mail != "a\r\nb" || rows[0].Line != 2 || rows[1].Line != 5 {
					t.Fatalf("got %q", got)
				}
				return
			}
			if got != tt.want {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestCSVErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, data string
		opt        Options
		err        error
		msg        string
	}{
		{"ErrNoHeader", "\n  \n,,\n", Options{}, ErrNoHeader, "empty"},
		{"ErrEmptyFile", "", Options{}, ErrNoHeader, "empty"},
		{"ErrNoUserIDColumn", "id,phone\n1,2\n", Options{}, ErrNoUserIDColumn, "line 1"},
		{"ErrUnterminatedQuote", "userId\n\"1\n2\n", Options{}, ErrMalformed, "never closed"},
		{"ErrTooManyRows", "userId\n1\n2\n3\n", Options{MaxRows: 2}, ErrTooManyRows, "line 4"},
		{"ErrCellTooLong", "userId\n" + strings.Repeat("1", MaxCellBytes+1) + "\n", Options{}, ErrTooLong, "line 2"},
		{"ErrLineTooLong", "userId,note\n1," + strings.Repeat("x", MaxRowBytes+2*chunkSize) + "\n", Options{}, ErrTooLong, "line 2"},
		{"ErrBinary", "userId\x00\x01\x02", Options{}, ErrNotSpreadsheet, "binary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := readAll(t, []byte(tt.data), "u.csv", tt.opt)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q lacks %q", err, tt.msg)
			}
		})
	}
}

func TestCSVSplitEverywhere(t *testing.T) {
	t.Parallel()
	data := "\xef\xbb\xbfuserId,phone,mail\r\n\"1\r\n1\",\"1\"\"3\",x\r\n\r\n2,,\"y,z\"\n3"
	want := "2|1\r\n1|1\"3|x\n5|2||y,z\n6|3||\n"
	for step := 1; step < 30; step++ {
		c := &csvSource{s: newStreamSize(newAutoDecoder(strings.NewReader(data), int64(len(data))), step), maxRows: 100, line: 1}
		var got []Row
		for {
			b := batch{rows: make([]Row, 0, 1)}
			err := c.fill(&b)
			b.finish()
			got = append(got, b.rows...)
			if err != nil {
				if err.Error() != "EOF" {
					t.Fatal(err)
				}
				break
			}
		}
		c.close()
		if s := rowsString(got); s != want {
			t.Fatalf("step %d: got %q, want %q", step, s, want)
		}
	}
}
