package quan

import (
	"errors"
	"testing"
)

func TestNormalizePhone(t *testing.T) {
	ok := map[string]string{
		"13812345678":        "+8613812345678",
		" 138 1234 5678 ":    "+8613812345678",
		"138-1234-5678":      "+8613812345678",
		"+86 138 1234 5678":  "+8613812345678",
		"+8619912345678":     "+8619912345678",
		"8613812345678":      "+8613812345678",
		"008613812345678":    "+8613812345678",
		"+14155552671":       "+14155552671",
		"+44 (20) 7946 0958": "+442079460958",
		"+1234567":           "+1234567",
	}
	for in, want := range ok {
		got, err := NormalizePhone(in)
		if err != nil || got != want {
			t.Errorf("NormalizePhone(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	bad := []string{
		"", "   ", "12812345678", "1381234567", "138123456789", "+8601012345678", "+861381234567",
		"02012345678", "+0123456789", "+123456", "+1234567890123456", "138x1234x5678", "13+812345678",
		"447911123456", "１３８１２３４５６７８", "138\n12345678",
	}
	for _, in := range bad {
		got, err := NormalizePhone(in)
		var ce *ContactError
		if !errors.As(err, &ce) || ce.Field != "phone" || ce.Problem() != InvalidContact {
			t.Errorf("NormalizePhone(%q) = %q, %v; want a phone *ContactError", in, got, err)
			continue
		}
		if ErrorCode(err) != EINVALID || !errors.Is(err, ErrInvalid) {
			t.Errorf("NormalizePhone(%q): code %q, want %q", in, ErrorCode(err), EINVALID)
		}
	}
}

func TestNormalizeMail(t *testing.T) {
	ok := map[string]string{
		"li.lei@example.com":      "li.lei@example.com",
		" Li.Lei@EXAMPLE.com ":    "Li.Lei@example.com",
		"a+tag@sub.example.co.uk": "a+tag@sub.example.co.uk",
		"x@xn--fiqs8s.cn":         "x@xn--fiqs8s.cn",
		"用户@例子.中国":                "用户@例子.中国",
	}
	for in, want := range ok {
		got, err := NormalizeMail(in)
		if err != nil || got != want {
			t.Errorf("NormalizeMail(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	long := make([]byte, 65)
	for i := range long {
		long[i] = 'a'
	}
	bad := []string{
		"", "li.lei", "li.lei@", "@example.com", "li lei@example.com", "Li Lei <li@example.com>", "<li@example.com>",
		"li@localhost", "li@-example.com", "li@example-.com", "li@exa_mple.com", "li@example..com", `"li lei"@example.com`,
		"li@example.com\r\nBcc: x@y.z", "a@b@example.com", string(long) + "@example.com", "li@example.com,bo@example.com",
	}
	for _, in := range bad {
		got, err := NormalizeMail(in)
		var ce *ContactError
		if !errors.As(err, &ce) || ce.Field != "mail" {
			t.Errorf("NormalizeMail(%q) = %q, %v; want a mail *ContactError", in, got, err)
		}
	}
}

func TestPickContact(t *testing.T) {
	tests := []struct {
		name       string
		ch         NotifyType
		candidates []string
		want       string
		problem    ContactProblem
	}{
		{"RowWins", NotifySMS, []string{"13812345678", "13900000000"}, "+8613812345678", ""},
		{"FileWhenRowBlank", NotifySMS, []string{" ", "13900000000"}, "+8613900000000", ""},
		{"InvalidRowDecides", NotifySMS, []string{"12345", "13900000000"}, "", InvalidContact},
		{"NoContact", NotifyEmail, []string{"", ""}, "", NoContact},
		{"NoCandidates", NotifyEmail, nil, "", NoContact},
		{"Mail", NotifyEmail, []string{"", "a@EXAMPLE.com"}, "a@example.com", ""},
		{"InboxTakesNoAddress", NotifyInbox, []string{"a@example.com"}, "", InvalidContact},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, problem := PickContact(tt.ch, tt.candidates...)
			if got != tt.want || problem != tt.problem {
				t.Errorf("PickContact = %q, %q; want %q, %q", got, problem, tt.want, tt.problem)
			}
		})
	}
}
