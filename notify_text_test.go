package quan

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// longVars are long but realistic values: a name at the length limit, a
// large 满减 with fen, a short link as SMS links are (19 characters).
func longVars(name string) MessageVars {
	until := time.Date(2026, 12, 31, 15, 59, 0, 0, time.UTC) // 23:59 in China
	return MessageVars{
		TemplateName: name,
		AmountOff:    99_999, Threshold: 1_000_050,
		ValidUntil: until, OpensAt: until.Add(-72 * time.Hour),
		Link: "https://q.cn/Ab3dE9",
	}
}

var (
	kinds    = []MessageKind{MessageIssued, MessageExpiring, MessageOpening}
	channels = []NotifyType{NotifyInbox, NotifyPopup, NotifyEmail, NotifySMS}
	langs    = []Lang{LangZH, LangEN}
)

func TestRenderEveryText(t *testing.T) {
	tx := Texts{}
	names := map[Lang]string{LangZH: "新人专享满减券", LangEN: "Welcome Deal"}
	for _, k := range kinds {
		for _, ch := range channels {
			for _, lang := range langs {
				v := longVars(names[lang])
				r, err := tx.Render(k, ch, lang, v)
				if err != nil {
					t.Fatalf("%s/%s/%s: %v", k, ch, lang, err)
				}
				if !strings.Contains(r.Text, names[lang]) || strings.Contains(r.Text, "<no value>") {
					t.Errorf("%s/%s/%s: text %q lacks the name or has an unfilled placeholder", k, ch, lang, r.Text)
				}
				if (ch == NotifySMS) != (r.Subject == "") {
					t.Errorf("%s/%s/%s: subject %q", k, ch, lang, r.Subject)
				}
				when := "12-31 23:59"
				if k == MessageOpening {
					when = "12-28 23:59"
				}
				if !strings.Contains(r.Text, when) || !strings.Contains(r.Text, "10000.5") && ch != NotifyPopup {
					t.Errorf("%s/%s/%s: text %q lacks the time %s (China) or the threshold", k, ch, lang, r.Text, when)
				}
				if ch == NotifyEmail || ch == NotifySMS {
					if !strings.Contains(r.Text, v.Link) {
						t.Errorf("%s/%s/%s: text %q lacks the link", k, ch, lang, r.Text)
					}
				}
				if r.Params["amount"] != "999.99" || r.Params["threshold"] != "10000.5" || r.Params["link"] != v.Link {
					t.Errorf("%s/%s/%s: params %v", k, ch, lang, r.Params)
				}
			}
		}
	}
	r, _ := tx.Render(MessageIssued, NotifyInbox, "fr", longVars("x"))
	if !strings.Contains(r.Text, "已发放") {
		t.Errorf("an unknown language renders %q, want Chinese", r.Text)
	}
}

// TestSMSFitsOneSegment renders every SMS text with long but realistic
// values and a provider's sign, and checks that each fits one segment
// with the name kept as far as it can be.
func TestSMSFitsOneSegment(t *testing.T) {
	tx := Texts{SMSSign: "【券券商城】", SMSSignEN: "[QuanShop]"}
	names := map[string]string{
		"ChineseAtLimit": string([]rune(strings.Repeat("双十一全场通用满减大促", 6))[:MaxNameLen]),
		"EnglishAtLimit": strings.Repeat("Spring Sale Storewide ", 3)[:MaxNameLen],
		"Short":          "新人券",
	}
	for label, name := range names {
		for _, k := range kinds {
			for _, lang := range langs {
				r, err := tx.Render(k, NotifySMS, lang, longVars(name))
				if err != nil {
					t.Fatalf("%s %s/%s: %v", label, k, lang, err)
				}
				used, limit := SMSLength(tx.sign(lang) + r.Text)
				if used > limit {
					t.Errorf("%s %s/%s: %d of %d: %q", label, k, lang, used, limit, r.Text)
				}
				shown := r.Params["name"]
				switch {
				case label == "Short" && lang == LangZH && shown != name:
					t.Errorf("%s %s/%s: a short name is cut to %q", label, k, lang, shown)
				case label == "EnglishAtLimit" && lang == LangEN && !strings.HasSuffix(shown, "..."):
					t.Errorf("%s %s/%s: a long English name is %q, want it cut with ...", label, k, lang, shown)
				case shown == "" && lang == LangZH:
					t.Errorf("%s %s/%s: a Chinese text left the name out", label, k, lang)
				case shown == "": // an English text without a Chinese name keeps GSM 7-bit
				case shown != name && !strings.HasSuffix(shown, "…") && !strings.HasSuffix(shown, "..."):
					t.Errorf("%s %s/%s: a cut name %q has no ellipsis", label, k, lang, shown)
				case shown != name && utf8.RuneCountInString(strings.TrimRight(strings.TrimSuffix(shown, "…"), ".")) < minSMSName:
					t.Errorf("%s %s/%s: name cut below %d characters: %q", label, k, lang, minSMSName, shown)
				}
				if !strings.Contains(r.Text, shown) {
					t.Errorf("%s %s/%s: params name %q is not the text's: %q", label, k, lang, shown, r.Text)
				}
				t.Logf("%s %s/%s %d/%d %s%s", label, k, lang, used, limit, tx.sign(lang), r.Text)
			}
		}
	}
}

func TestSMSRefusesWhatCannotFit(t *testing.T) {
	v := longVars("新人专享满减券")
	v.Link = "https://www.example.com/some/long/landing/page?utm_source=sms&utm_campaign=double11"
	_, err := Texts{}.Render(MessageIssued, NotifySMS, LangZH, v)
	if ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), "segment") {
		t.Fatalf("a link too long for one segment: err = %v, want EINVALID about the segment", err)
	}
}

func TestRenderCleansNames(t *testing.T) {
	r, err := Texts{}.Render(MessageIssued, NotifyEmail, LangEN, MessageVars{TemplateName: "Sale\r\nBcc: x@y.z", AmountOff: 500})
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(r.Subject, "\r\n") || r.Subject != "You got a coupon: Sale  Bcc: x@y.z" {
		t.Errorf("subject %q keeps line breaks", r.Subject)
	}
}

func TestSMSLength(t *testing.T) {
	tests := []struct {
		s           string
		used, limit int
	}{
		{"Hello ¥5 off", 12, 160},
		{"a{b}€", 8, 160},
		{"您好", 2, 70},
		{"Hi 🎉", 5, 70},
		{strings.Repeat("a", 160), 160, 160},
	}
	for _, tt := range tests {
		used, limit := SMSLength(tt.s)
		if used != tt.used || limit != tt.limit {
			t.Errorf("SMSLength(%q) = %d, %d; want %d, %d", tt.s, used, limit, tt.used, tt.limit)
		}
	}
	if FitsOneSMS(strings.Repeat("a", 161)) || !FitsOneSMS(strings.Repeat("好", 70)) || FitsOneSMS(strings.Repeat("好", 71)) {
		t.Error("FitsOneSMS misjudges the limits")
	}
}

func TestYuanAndOffer(t *testing.T) {
	for fen, want := range map[int64]string{0: "0", 5: "0.05", 50: "0.5", 2000: "20", 2050: "20.5", 2005: "20.05", 100_000_000: "1000000"} {
		if got := Yuan(fen); got != want {
			t.Errorf("Yuan(%d) = %q, want %q", fen, got, want)
		}
	}
	offers := []struct {
		lang Lang
		v    MessageVars
		want string
	}{
		{LangZH, MessageVars{AmountOff: 2000, Threshold: 10000}, "满100减20元"},
		{LangZH, MessageVars{AmountOff: 500}, "立减5元"},
		{LangZH, MessageVars{Rate: 85}, "8.5折"},
		{LangZH, MessageVars{Rate: 80, Threshold: 5000}, "满50元享8折"},
		{LangEN, MessageVars{AmountOff: 2000, Threshold: 10000}, "¥20 off orders of ¥100+"},
		{LangEN, MessageVars{Rate: 85}, "15% off"},
	}
	for _, o := range offers {
		if got := offer(o.lang, o.v); got != o.want {
			t.Errorf("offer(%s, %+v) = %q, want %q", o.lang, o.v, got, o.want)
		}
	}
}

func TestOutgoingValidate(t *testing.T) {
	ok := Outgoing{ID: "d42-u7-sms", Channel: NotifySMS, To: "+8613812345678", Text: "hi"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]Outgoing{
		"NoID":   {Channel: NotifySMS, To: "x", Text: "hi"},
		"BadID":  {ID: "a b", Channel: NotifySMS, To: "x", Text: "hi"},
		"LongID": {ID: strings.Repeat("a", 129), Channel: NotifySMS, To: "x", Text: "hi"},
		"Inbox":  {ID: "a", Channel: NotifyInbox, To: "x", Text: "hi"},
		"NoTo":   {ID: "a", Channel: NotifyEmail, Text: "hi"},
		"NoText": {ID: "a", Channel: NotifyEmail, To: "x"},
	} {
		if err := o.Validate(); ErrorCode(err) != EINVALID {
			t.Errorf("%s: Validate = %v, want EINVALID", name, err)
		}
	}
}
