package quan

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"time"
	"unicode"
)

// MessageVars fill a message's placeholders. Amounts are fen; zero amounts
// and times are left out of the offer and the text.
type MessageVars struct {
	TemplateName string
	AmountOff    int64     // fen off (立减, 满减)
	Threshold    int64     // fen the order must reach (满)
	Rate         int64     // percent paid for a discount coupon (85 = 8.5折); 0 for others
	ValidUntil   time.Time // the coupon's end (issued, expiring)
	OpensAt      time.Time // the template's issue start (opening)
	Link         string    // where to see the coupon or claim it; short for SMS
}

// Rendered is a message's text in one channel and language.
type Rendered struct {
	Subject string // for email, inbox and popup; empty for SMS
	Text    string
	// Params are the placeholders as the text shows them (the name cut as
	// in the text): name, offer, amount, threshold, until, opens, link.
	// Empty values are left out.
	Params map[string]string
}

// Texts renders the built-in message texts: one per kind, channel and
// language, Chinese by default and English for LangEN. The zero value is
// ready to use.
type Texts struct {
	// SMSSign is the signature the SMS provider prepends to every text
	// (【券券商城】): the providers count it against the segment, so Render
	// does too. Empty reserves nothing.
	SMSSign string
	// SMSSignEN is the signature of English texts ([QuanShop]); empty
	// uses SMSSign. A Chinese sign on an English text makes the whole SMS
	// UCS-2, 70 characters instead of 160.
	SMSSignEN string
	// Location is where times are shown; nil is China Standard Time
	// (UTC+8, which keeps no daylight saving time).
	Location *time.Location
}

// minSMSName is the fewest characters of a template's name an SMS keeps
// when it cuts the name to fit one segment.
const minSMSName = 4

// Render renders the text of kind for channel ch in lang (Chinese unless
// LangEN). Names lose control characters and line breaks in every channel.
//
// An SMS must fit one segment with the sign (SMSLength): if the whole
// name does not fit, it is cut to the longest prefix that does, followed
// by "…" (Chinese) or "..." (English, which keeps GSM 7-bit), but never
// below minSMSName characters; if even that does not fit, the text leaves
// the name out ("您获得优惠券：…", "You got a coupon: …") — which is what lets
// an English text keep GSM 7-bit's 160 characters when the name is
// Chinese; and if that does not fit either (the link or the sign is too
// long), Render returns an EINVALID error rather than a text split in two.
func (t Texts) Render(kind MessageKind, ch NotifyType, lang Lang, v MessageVars) (Rendered, error) {
	if lang != LangEN {
		lang = LangZH
	}
	tmpl, ok := builtinTexts()[textKey{kind, ch, lang}]
	if !ok {
		return Rendered{}, Errorf(EINVALID, "no %s text for %s messages", ch, kind)
	}
	name := []rune(cleanName(v.TemplateName))
	r, err := t.render(tmpl, lang, v, string(name))
	sign := t.sign(lang)
	if err != nil || ch != NotifySMS || FitsOneSMS(sign+r.Text) {
		return r, err
	}
	// Binary search for the longest cut that fits: fitting only gets
	// easier as the name shortens.
	ellipsis := "…"
	if lang == LangEN {
		ellipsis = "..."
	}
	lo, hi := minSMSName, len(name)-1 // the answer is in [lo-1, hi]; lo-1 means none fits
	best := Rendered{}
	found := false
	for lo <= hi {
		mid := (lo + hi) / 2
		c, err := t.render(tmpl, lang, v, string(name[:mid])+ellipsis)
		if err != nil {
			return Rendered{}, err
		}
		if FitsOneSMS(sign + c.Text) {
			best, found, lo = c, true, mid+1
		} else {
			hi = mid - 1
		}
	}
	if found {
		return best, nil
	}
	// The shortest cut is too long, or a name of few characters outside
	// GSM 7-bit turns an English text into UCS-2: say "a coupon" instead.
	c, err := t.render(tmpl, lang, v, "")
	if err != nil || FitsOneSMS(sign+c.Text) {
		return c, err
	}
	{
		used, limit := SMSLength(sign + r.Text)
		return Rendered{}, Errorf(EINVALID, "the %s SMS takes %d of %d characters and does not fit one segment even without the name: shorten the link or the sign", kind, used, limit)
	}
}

// sign is the SMS signature the provider prepends to texts in lang.
func (t Texts) sign(lang Lang) string {
	if lang == LangEN && t.SMSSignEN != "" {
		return t.SMSSignEN
	}
	return t.SMSSign
}

func (t Texts) render(p textPair, lang Lang, v MessageVars, name string) (Rendered, error) {
	loc := t.Location
	if loc == nil {
		loc = ChinaTime
	}
	layout := "2006-01-02 15:04"
	if p.sms {
		layout = "01-02 15:04"
	}
	data := map[string]string{"name": name, "offer": offer(lang, v), "link": v.Link}
	if v.AmountOff > 0 {
		data["amount"] = Yuan(v.AmountOff)
	}
	if v.Threshold > 0 {
		data["threshold"] = Yuan(v.Threshold)
	}
	if !v.ValidUntil.IsZero() {
		data["until"] = v.ValidUntil.In(loc).Format(layout)
	}
	if !v.OpensAt.IsZero() {
		data["opens"] = v.OpensAt.In(loc).Format(layout)
	}
	var out Rendered
	var b strings.Builder
	if p.subject != nil {
		if err := p.subject.Execute(&b, data); err != nil {
			return Rendered{}, fmt.Errorf("render subject: %w", err)
		}
		out.Subject = b.String()
		b.Reset()
	}
	if err := p.text.Execute(&b, data); err != nil {
		return Rendered{}, fmt.Errorf("render text: %w", err)
	}
	out.Text = b.String()
	out.Params = make(map[string]string, len(data))
	for k, s := range data {
		if s != "" {
			out.Params[k] = s
		}
	}
	return out, nil
}

// ChinaTime is China Standard Time; a fixed zone needs no tzdata on the
// host.
var ChinaTime = time.FixedZone("CST", 8*3600)

// cleanName turns control characters and line breaks into spaces and
// trims: a name goes into mail subjects and one-line texts.
func cleanName(s string) string {
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s))
}

// Yuan formats fen as yuan with no trailing zeros: 2000 → "20", 2050 →
// "20.5", 2005 → "20.05".
func Yuan(fen int64) string {
	s := strconv.FormatInt(fen/100, 10)
	if c := fen % 100; c != 0 {
		s += strings.TrimRight(fmt.Sprintf(".%02d", c), "0")
	}
	return s
}

// offer says what the coupon gives in a few words: 满100减20元, 立减20元,
// 8.5折, 满100元享8.5折 / ¥20 off orders of ¥100+, ¥20 off, 15% off.
func offer(lang Lang, v MessageVars) string {
	if lang == LangEN {
		var s string
		switch {
		case v.Rate > 0:
			s = strconv.FormatInt(100-v.Rate, 10) + "% off"
		case v.AmountOff > 0:
			s = "¥" + Yuan(v.AmountOff) + " off"
		default:
			return "a discount"
		}
		if v.Threshold > 0 {
			s += " orders of ¥" + Yuan(v.Threshold) + "+"
		}
		return s
	}
	switch {
	case v.Rate > 0:
		r := strconv.FormatInt(v.Rate/10, 10)
		if v.Rate%10 != 0 {
			r += "." + strconv.FormatInt(v.Rate%10, 10)
		}
		if v.Threshold > 0 {
			return "满" + Yuan(v.Threshold) + "元享" + r + "折"
		}
		return r + "折"
	case v.AmountOff > 0 && v.Threshold > 0:
		return "满" + Yuan(v.Threshold) + "减" + Yuan(v.AmountOff) + "元"
	case v.AmountOff > 0:
		return "立减" + Yuan(v.AmountOff) + "元"
	}
	return "优惠"
}

type textKey struct {
	kind MessageKind
	ch   NotifyType
	lang Lang
}

type textPair struct {
	subject, text *template.Template
	sms           bool
}

// textSources are the built-in texts: {subject, text}; SMS have no subject.
// Placeholders: .name .offer .amount .threshold .until .opens .link.
var textSources = map[textKey][2]string{
	{MessageIssued, NotifyInbox, LangZH}: {`您获得一张优惠券`, `「{{.name}}」已发放到您的账户：{{.offer}}，有效期至{{.until}}。{{if .link}}查看：{{.link}}{{end}}`},
	{MessageIssued, NotifyPopup, LangZH}: {`恭喜获得优惠券`, `「{{.name}}」{{.offer}}，{{.until}}前有效`},
	{MessageIssued, NotifyEmail, LangZH}: {`您获得一张优惠券：{{.name}}`, "您好，\n\n优惠券「{{.name}}」已发放到您的账户：{{.offer}}，有效期至{{.until}}。\n{{if .link}}\n查看并使用：{{.link}}\n{{end}}"},
	{MessageIssued, NotifySMS, LangZH}:   {``, `您获得{{with .name}}「{{.}}」{{else}}优惠券{{end}}：{{.offer}}，{{.until}}前有效{{if .link}} {{.link}}{{end}}`},

	{MessageExpiring, NotifyInbox, LangZH}: {`优惠券即将过期`, `您的优惠券「{{.name}}」（{{.offer}}）将于{{.until}}过期，请尽快使用。{{if .link}}查看：{{.link}}{{end}}`},
	{MessageExpiring, NotifyPopup, LangZH}: {`优惠券即将过期`, `「{{.name}}」{{.until}}过期，别忘了用`},
	{MessageExpiring, NotifyEmail, LangZH}: {`您的优惠券即将过期：{{.name}}`, "您好，\n\n您的优惠券「{{.name}}」（{{.offer}}）将于{{.until}}过期，请尽快使用。\n{{if .link}}\n去使用：{{.link}}\n{{end}}"},
	{MessageExpiring, NotifySMS, LangZH}:   {``, `您的{{with .name}}「{{.}}」{{else}}优惠券{{end}}（{{.offer}}）将于{{.until}}过期{{if .link}} {{.link}}{{end}}`},

	{MessageOpening, NotifyInbox, LangZH}: {`您预约的优惠券即将开抢`, `「{{.name}}」（{{.offer}}）将于{{.opens}}开抢。{{if .link}}去领取：{{.link}}{{end}}`},
	{MessageOpening, NotifyPopup, LangZH}: {`即将开抢`, `「{{.name}}」{{.opens}}开抢`},
	{MessageOpening, NotifyEmail, LangZH}: {`您预约的优惠券即将开抢：{{.name}}`, "您好，\n\n您预约的优惠券「{{.name}}」（{{.offer}}）将于{{.opens}}开抢。\n{{if .link}}\n去领取：{{.link}}\n{{end}}"},
	{MessageOpening, NotifySMS, LangZH}:   {``, `您预约的{{with .name}}「{{.}}」{{else}}优惠券{{end}}（{{.offer}}）{{.opens}}开抢{{if .link}} {{.link}}{{end}}`},

	{MessageIssued, NotifyInbox, LangEN}: {`You got a coupon`, `"{{.name}}" is in your account: {{.offer}}, valid until {{.until}}.{{if .link}} See it: {{.link}}{{end}}`},
	{MessageIssued, NotifyPopup, LangEN}: {`You got a coupon`, `"{{.name}}": {{.offer}}, valid until {{.until}}`},
	{MessageIssued, NotifyEmail, LangEN}: {`You got a coupon: {{.name}}`, "Hello,\n\nThe coupon \"{{.name}}\" is in your account: {{.offer}}, valid until {{.until}}.\n{{if .link}}\nSee and use it: {{.link}}\n{{end}}"},
	{MessageIssued, NotifySMS, LangEN}:   {``, `You got {{with .name}}"{{.}}"{{else}}a coupon{{end}}: {{.offer}}, valid until {{.until}}.{{if .link}} {{.link}}{{end}}`},

	{MessageExpiring, NotifyInbox, LangEN}: {`Your coupon expires soon`, `Your coupon "{{.name}}" ({{.offer}}) expires {{.until}}. Use it soon.{{if .link}} See it: {{.link}}{{end}}`},
	{MessageExpiring, NotifyPopup, LangEN}: {`Expires soon`, `"{{.name}}" expires {{.until}}`},
	{MessageExpiring, NotifyEmail, LangEN}: {`Your coupon expires soon: {{.name}}`, "Hello,\n\nYour coupon \"{{.name}}\" ({{.offer}}) expires {{.until}}. Use it soon.\n{{if .link}}\nUse it: {{.link}}\n{{end}}"},
	{MessageExpiring, NotifySMS, LangEN}:   {``, `Your coupon{{with .name}} "{{.}}"{{end}} ({{.offer}}) expires {{.until}}. Use it soon!{{if .link}} {{.link}}{{end}}`},

	{MessageOpening, NotifyInbox, LangEN}: {`A coupon you asked about opens soon`, `"{{.name}}" ({{.offer}}) opens for claims at {{.opens}}.{{if .link}} Claim it: {{.link}}{{end}}`},
	{MessageOpening, NotifyPopup, LangEN}: {`Opens soon`, `"{{.name}}" opens at {{.opens}}`},
	{MessageOpening, NotifyEmail, LangEN}: {`Opens soon: {{.name}}`, "Hello,\n\nThe coupon \"{{.name}}\" ({{.offer}}) you asked to be reminded of opens for claims at {{.opens}}.\n{{if .link}}\nClaim it: {{.link}}\n{{end}}"},
	{MessageOpening, NotifySMS, LangEN}:   {``, `{{with .name}}"{{.}}"{{else}}The coupon you asked about{{end}} ({{.offer}}) opens for claims at {{.opens}}.{{if .link}} {{.link}}{{end}}`},
}

// builtinTexts parses textSources once, on first use: the table is a
// constant, so a parse error is a bug that the tests catch.
var builtinTexts = sync.OnceValue(func() map[textKey]textPair {
	out := make(map[textKey]textPair, len(textSources))
	for k, src := range textSources {
		name := string(k.kind) + "/" + string(k.ch) + "/" + string(k.lang)
		p := textPair{sms: k.ch == NotifySMS, text: template.Must(template.New(name).Option("missingkey=zero").Parse(src[1]))}
		if src[0] != "" {
			p.subject = template.Must(template.New(name + "/subject").Option("missingkey=zero").Parse(src[0]))
		}
		out[k] = p
	}
	return out
})
