package console

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/templates"
)

func (c *Console) templateRoutes(page func(string, pageFunc)) {
	page("GET "+Prefix+"/templates", c.templateList)
	page("GET "+Prefix+"/templates/new", c.templateNew)
	page("POST "+Prefix+"/templates", c.templateCreate)
	page("POST "+Prefix+"/templates/preview", c.templatePreview)
	page("GET "+Prefix+"/templates/{id}", c.templateShow)
	page("GET "+Prefix+"/templates/{id}/edit", c.templateEditForm)
	page("POST "+Prefix+"/templates/{id}/edit", c.templateEdit)
	page("POST "+Prefix+"/templates/{id}/stock", c.templateStock)
	for action, fn := range map[string]func(*templates.Service, context.Context, quan.Identity, int64) (*quan.Template, error){
		"activate":  (*templates.Service).Activate,
		"pause":     (*templates.Service).Pause,
		"resume":    (*templates.Service).Resume,
		"terminate": (*templates.Service).Terminate,
	} {
		page("POST "+Prefix+"/templates/{id}/"+action, c.templateChange(fn))
	}
}

// templateInputs are the names of the template form's inputs, as quan's
// validation names their fields.
var templateInputs = []string{"name", "description", "kind", "rule.amount", "rule.threshold", "rule.rate",
	"rule.cap", "rule.step", "source", "scope.type", "scope.ids", "issueStart", "issueEnd", "validity",
	"validity.type", "validity.start", "validity.end", "validity.hours", "perUserLimit", "stock", "codePrefix", "shopNo", "stacking", "priority",
	"budget", "perUserDaily", "perUserWeekly", "eligibility", "applies",
	"promoCode", "logoUrl", "category", "goods", "instructions", "metadata"}

type templateListData struct {
	Rows                template.HTML // see templateRows
	Items               []*quan.Template
	Total               int
	Page, Pages         int
	Status, Kind, Query string
	Prev, Next          string // URLs of the pages before and after, "" if none
	Statuses            []quan.TemplateStatus
	Kinds               []quan.Kind
}

// listPageSize is how many templates a page of the list shows.
const listPageSize = 50

// maxPage bounds the page a list is asked for: its offset stays far from
// overflowing, and no list has as many pages.
const maxPage = 1 << 24

// pageNumber reads a list's ?page= (1 when absent): a whole number from 1
// to maxPage, else EINVALID naming the parameter.
func pageNumber(q url.Values) (int, error) {
	v := q.Get("page")
	if v == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxPage {
		return 0, &quan.Error{Code: quan.EINVALID, Message: "invalid list parameters", Fields: []quan.FieldError{{
			Field: "page", Message: fmt.Sprintf("%q: must be a whole number from 1 to %d", v, maxPage)}}}
	}
	return n, nil
}

func (c *Console) templateList(w http.ResponseWriter, r *http.Request, s *session) error {
	q := r.URL.Query()
	d := templateListData{
		Status:   q.Get("status"),
		Kind:     q.Get("kind"),
		Query:    strings.TrimSpace(q.Get("q")),
		Statuses: []quan.TemplateStatus{quan.TemplateDraft, quan.TemplateActive, quan.TemplatePaused, quan.TemplateEnded},
		Kinds:    []quan.Kind{quan.KindDirect, quan.KindThreshold, quan.KindDiscount, quan.KindStep, quan.KindComposite},
	}
	var err error
	if d.Page, err = pageNumber(q); err != nil {
		return err
	}
	items, total, err := c.Templates.List(r.Context(), s.Who, quan.TemplateFilter{
		Status:       quan.TemplateStatus(d.Status),
		Kind:         quan.Kind(d.Kind),
		NameContains: d.Query,
		Offset:       (d.Page - 1) * listPageSize,
		Limit:        listPageSize,
	})
	if err != nil {
		return err
	}
	d.Items, d.Total, d.Rows = items, total, templateRows(c.newView(r, s), items)
	d.Pages = max(1, (total+listPageSize-1)/listPageSize)
	link := func(page int) string {
		v := url.Values{}
		for k, x := range map[string]string{"status": d.Status, "kind": d.Kind, "q": d.Query} {
			if x != "" {
				v.Set(k, x)
			}
		}
		v.Set("page", strconv.Itoa(page))
		return Prefix + "/templates?" + v.Encode()
	}
	if d.Page > 1 {
		d.Prev = link(d.Page - 1)
	}
	if d.Page < d.Pages {
		d.Next = link(d.Page + 1)
	}
	c.render(w, r, s, http.StatusOK, "templates", "tpl.title", d)
	return nil
}

// templateRows is the <tbody> of the template list, written in Go with
// every text escaped: a page of rows then costs the template engine one
// action, not a reflected call per cell (a list of 10,000 rows renders in
// a fraction of the time; see BenchmarkRenderTemplateRows).
func templateRows(v *view, items []*quan.Template) template.HTML {
	var b strings.Builder
	b.Grow(len(items) * 400)
	kinds, labels := map[quan.Kind]string{}, map[quan.TemplateStatus]string{}
	admin := v.Admin()
	cell := func(class, text string) {
		b.WriteString("<td")
		if class != "" {
			b.WriteString(` class="` + class + `"`)
		}
		b.WriteString(">")
		b.WriteString(html.EscapeString(text))
		b.WriteString("</td>")
	}
	for _, t := range items {
		kind, ok := kinds[t.Kind]
		if !ok {
			kind = v.T("kind." + string(t.Kind))
			kinds[t.Kind] = kind
		}
		label, ok := labels[t.Status]
		if !ok {
			label = v.T("status." + string(t.Status))
			labels[t.Status] = label
		}
		id := strconv.FormatInt(t.ID, 10)
		b.WriteString("<tr><td>" + id + `</td><td><a href="/console/templates/` + id + `">`)
		b.WriteString(html.EscapeString(t.Name))
		b.WriteString("</a></td>")
		if admin {
			cell("", strconv.FormatInt(t.ShopNo, 10))
		}
		cell("", kind)
		cell("", v.RuleText(t))
		b.WriteString(`<td><span class="status status-` + html.EscapeString(string(t.Status)) + `">` + html.EscapeString(label) + "</span></td>")
		cell("num", strconv.FormatInt(t.Stock, 10)+" / "+strconv.FormatInt(t.TotalStock, 10))
		cell("nowrap", v.Time(t.IssueStart)+" – "+v.Time(t.IssueEnd))
		b.WriteString("</tr>\n")
	}
	return template.HTML(b.String())
}

// templateForm is the template form's values as typed, so that a form
// refused is shown again as it was.
type templateForm struct {
	ID                                     int64
	Name, Description, Kind, Source, Scope string
	IDs                                    string
	Amount, Threshold, Rate, Cap, Step     string
	IssueStart, IssueEnd                   string
	Validity, ValidStart, ValidEnd         string
	ValidHours, PerUserLimit, Stock        string
	CodePrefix, ShopNo                     string
	Stacking, Priority                     string
	Budget, PerUserDaily, PerUserWeekly    string // budget in yuan, "" for none
	Eligibility, Applies                   string // CEL rules, "" for none
	PromoCode                              string // 口令券, "" for none
	// The display: goods one a line or split by commas, metadata one
	// key=value a line.
	LogoURL, Category, Goods string
	Instructions, Metadata   string
	Example                  string // the preview's example order, in yuan
}

func (c *Console) templateNew(w http.ResponseWriter, r *http.Request, s *session) error {
	v := c.newView(r, s)
	now := c.Now.UTC().In(v.loc)
	f := templateForm{Kind: string(quan.KindThreshold), Source: string(quan.SourceShop), Scope: string(quan.ScopeAll),
		Stacking: string(quan.StackAny), Priority: "0",
		Validity: string(quan.ValidRelative), ValidHours: "168", PerUserLimit: "1", Stock: "1000", Example: "100",
		IssueStart: v.InputTime(now.Truncate(time.Hour)), IssueEnd: v.InputTime(now.Truncate(time.Hour).AddDate(0, 0, 30))}
	return c.showTemplateForm(w, v, http.StatusOK, "tpl.new", f)
}

func (c *Console) showTemplateForm(w http.ResponseWriter, v *view, status int, title string, f templateForm) error {
	v.Title = v.T(title)
	v.Data = f
	c.renderView(w, status, "template_form", v)
	return nil
}

// spec reads the form into a template spec. Values that cannot be read
// at all (an amount that is no number) are field errors of their own;
// everything else is left to quan's validation, as the API does.
func (f *templateForm) spec(v *view) (quan.TemplateSpec, int64, int64, []quan.FieldError) {
	var bad []quan.FieldError
	fen := func(field, s string) int64 {
		n, err := parseYuan(s)
		if err != nil {
			bad = append(bad, quan.FieldError{Field: field, Message: err.Error()})
		}
		return n
	}
	whole := func(field, s string) int64 {
		s = strings.TrimSpace(s)
		if s == "" {
			return 0
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			bad = append(bad, quan.FieldError{Field: field, Message: fmt.Sprintf("%q is not a whole number", s)})
		}
		return n
	}
	at := func(field, s string) time.Time {
		s = strings.TrimSpace(s)
		if s == "" {
			return time.Time{}
		}
		t, err := time.ParseInLocation("2006-01-02T15:04", s, v.loc)
		if err != nil {
			bad = append(bad, quan.FieldError{Field: field, Message: fmt.Sprintf("%q is not a date and time", s)})
		}
		return t.UTC()
	}
	spec := quan.TemplateSpec{
		Name:        f.Name,
		Description: strings.ReplaceAll(f.Description, "\r\n", "\n"),
		Kind:        quan.Kind(f.Kind),
		Source:      quan.Source(f.Source),
		Scope:       quan.Scope{Kind: quan.ScopeKind(f.Scope), IDs: splitIDs(f.IDs)},
		IssueStart:  at("issueStart", f.IssueStart),
		IssueEnd:    at("issueEnd", f.IssueEnd),
		Validity:    quan.Validity{Kind: quan.ValidityKind(f.Validity)},
		CodePrefix:  strings.TrimSpace(f.CodePrefix),
		Stacking:    quan.Stacking(f.Stacking),
		Priority:    whole("priority", f.Priority),
		Eligibility: strings.ReplaceAll(f.Eligibility, "\r\n", "\n"),
		Applies:     strings.ReplaceAll(f.Applies, "\r\n", "\n"),
		PromoCode:   strings.TrimSpace(f.PromoCode),

		LogoURL:      strings.TrimSpace(f.LogoURL),
		Category:     strings.TrimSpace(f.Category),
		Goods:        splitList(f.Goods),
		Instructions: strings.ReplaceAll(f.Instructions, "\r\n", "\n"),
	}
	spec.Metadata, bad = readMetadata(f.Metadata, bad)
	// Only the amounts of the kind apply; the others are not sent, as a
	// form keeps what was typed into inputs that are hidden.
	switch spec.Kind {
	case quan.KindDirect:
		spec.Rule.Amount = fen("rule.amount", f.Amount)
	case quan.KindThreshold:
		spec.Rule.Amount = fen("rule.amount", f.Amount)
		spec.Rule.Threshold = fen("rule.threshold", f.Threshold)
	case quan.KindDiscount:
		spec.Rule.Rate = whole("rule.rate", f.Rate)
		spec.Rule.Threshold = fen("rule.threshold", f.Threshold)
		spec.Rule.Cap = fen("rule.cap", f.Cap)
	case quan.KindStep:
		spec.Rule.Amount = fen("rule.amount", f.Amount)
		spec.Rule.Step = fen("rule.step", f.Step)
		spec.Rule.Cap = fen("rule.cap", f.Cap)
	case quan.KindComposite:
		spec.Rule.Amount = fen("rule.amount", f.Amount)
		spec.Rule.Threshold = fen("rule.threshold", f.Threshold)
		spec.Rule.Rate = whole("rule.rate", f.Rate)
		spec.Rule.Cap = fen("rule.cap", f.Cap)
	}
	switch spec.Validity.Kind {
	case quan.ValidFixed:
		spec.Validity.Start = at("validity.start", f.ValidStart)
		spec.Validity.End = at("validity.end", f.ValidEnd)
	case quan.ValidRelative:
		spec.Validity.Hours = whole("validity.hours", f.ValidHours)
	}
	if spec.Scope.Kind == quan.ScopeAll {
		spec.Scope.IDs = nil
	}
	spec.PerUserLimit = whole("perUserLimit", f.PerUserLimit)
	if strings.TrimSpace(f.Budget) != "" {
		spec.Budget = fen("budget", f.Budget)
	}
	spec.PerUserDaily = whole("perUserDaily", f.PerUserDaily)
	spec.PerUserWeekly = whole("perUserWeekly", f.PerUserWeekly)
	return spec, whole("stock", f.Stock), whole("shopNo", f.ShopNo), bad
}

func splitIDs(s string) []string {
	var ids []string
	for _, id := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '，' || r == '\n' || r == '\r' || r == ' ' }) {
		ids = append(ids, id)
	}
	return ids
}

// splitList reads goods: one a line, or split by commas (，too); blanks
// around each are dropped, and so are empty entries.
func splitList(s string) []string {
	var out []string
	for _, g := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '，' || r == '\n' || r == '\r' }) {
		if g = strings.TrimSpace(g); g != "" {
			out = append(out, g)
		}
	}
	return out
}

// readMetadata reads key=value lines; a line without "=" is a field error
// of metadata.
func readMetadata(s string, bad []quan.FieldError) (map[string]string, []quan.FieldError) {
	var m map[string]string
	for i, line := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			bad = append(bad, quan.FieldError{Field: "metadata", Message: fmt.Sprintf("line %d: %q is not key=value", i+1, line)})
			continue
		}
		if m == nil {
			m = map[string]string{}
		}
		m[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return m, bad
}

// metadataText writes metadata as readMetadata reads it, keys in order.
func metadataText(m map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "%s=%s\n", k, m[k])
	}
	return b.String()
}

func readTemplateForm(r *http.Request) templateForm {
	g := r.PostFormValue
	return templateForm{
		Name: g("name"), Description: g("description"), Kind: g("kind"), Source: g("source"),
		Scope: g("scope.type"), IDs: g("scope.ids"), Amount: g("rule.amount"), Threshold: g("rule.threshold"),
		Rate: g("rule.rate"), Cap: g("rule.cap"), Step: g("rule.step"), IssueStart: g("issueStart"),
		IssueEnd: g("issueEnd"), Validity: g("validity.type"), ValidStart: g("validity.start"),
		ValidEnd: g("validity.end"), ValidHours: g("validity.hours"), PerUserLimit: g("perUserLimit"),
		Stock: g("stock"), CodePrefix: g("codePrefix"), ShopNo: g("shopNo"), Example: g("example"),
		Stacking: g("stacking"), Priority: g("priority"),
		Budget: g("budget"), PerUserDaily: g("perUserDaily"), PerUserWeekly: g("perUserWeekly"),
		Eligibility: g("eligibility"), Applies: g("applies"),
		PromoCode: g("promoCode"),
		LogoURL:   g("logoUrl"), Category: g("category"), Goods: g("goods"),
		Instructions: g("instructions"), Metadata: g("metadata"),
	}
}

func invalid(bad []quan.FieldError) error {
	return &quan.Error{Code: quan.EINVALID, Message: "the template has invalid fields", Fields: bad}
}

func (c *Console) templateCreate(w http.ResponseWriter, r *http.Request, s *session) error {
	v := c.newView(r, s)
	f := readTemplateForm(r)
	spec, stock, shop, bad := f.spec(v)
	if len(bad) > 0 {
		v.setError(invalid(bad), templateInputs...)
		return c.showTemplateForm(w, v, http.StatusBadRequest, "tpl.new", f)
	}
	t, err := c.Templates.Create(r.Context(), s.Who, templates.NewTemplate{TemplateSpec: spec, Stock: stock, ShopNo: shop})
	if err != nil {
		if quan.ErrorCode(err) != quan.EINVALID {
			return err
		}
		v.setError(err, templateInputs...)
		return c.showTemplateForm(w, v, http.StatusBadRequest, "tpl.new", f)
	}
	http.Redirect(w, r, fmt.Sprintf("%s/templates/%d?done=created", Prefix, t.ID), http.StatusSeeOther)
	return nil
}

// preview is the discount of the form's rule on an example order.
type preview struct {
	Discount string `json:"discount"` // yuan
	Pays     string `json:"pays"`     // yuan
	Applies  bool   `json:"applies"`
	Text     string `json:"text"`
	Error    string `json:"error,omitempty"`
}

// templatePreview computes the discount of the rule in the form on the
// form's example order, with the rule the wallet prices orders with.
func (c *Console) templatePreview(w http.ResponseWriter, r *http.Request, s *session) error {
	v := c.newView(r, s)
	f := readTemplateForm(r)
	spec, _, _, bad := f.spec(v)
	amount, err := parseYuan(f.Example)
	var p preview
	switch {
	case err != nil:
		p.Error = err.Error()
	case len(bad) > 0:
		p.Error = bad[0].Field + ": " + bad[0].Message
	default:
		off, ok := spec.Rule.Discount(spec.Kind, amount)
		p = preview{Discount: yuan(off), Pays: yuan(amount - off), Applies: ok}
		if ok {
			p.Text = v.T("tpl.preview.off", p.Discount, p.Pays)
		} else {
			p.Text = v.T("tpl.preview.no")
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	return json.NewEncoder(w).Encode(p)
}

type templateShowData struct {
	T       *quan.Template
	History []*quan.AuditEntry
	Actions []string             // the status changes the template allows now
	Rules   *templates.RulesInfo // every version of its rules
}

func (c *Console) templateShow(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	t, err := c.Templates.Get(r.Context(), s.Who, id)
	if err != nil {
		return err
	}
	hist, err := c.Templates.History(r.Context(), s.Who, id)
	if err != nil {
		return err
	}
	v := c.newView(r, s)
	switch r.URL.Query().Get("done") {
	case "created":
		v.Notice = v.T("tpl.created")
	case "saved":
		v.Notice = v.T("common.saved")
	case "status":
		v.Notice = v.T("tpl.changed", v.T("status."+string(t.Status)))
	case "stock":
		n, _ := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
		v.Notice = v.T("tpl.stockAdded", n)
	}
	if e := r.URL.Query().Get("error"); e != "" {
		v.Error = e
	}
	rules, err := c.Templates.RulesVersions(r.Context(), s.Who, id)
	if err != nil {
		return err
	}
	d := templateShowData{T: t, History: hist, Rules: rules}
	switch t.Status {
	case quan.TemplateDraft:
		d.Actions = []string{"activate", "terminate"}
	case quan.TemplateActive:
		d.Actions = []string{"pause", "terminate"}
	case quan.TemplatePaused:
		d.Actions = []string{"resume", "terminate"}
	}
	v.Title = t.Name
	v.Data = d
	c.renderView(w, http.StatusOK, "template", v)
	return nil
}

func pathID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, quan.Errorf(quan.ENOTFOUND, "no such page %s", r.URL.Path)
	}
	return id, nil
}

// templateChange makes a status change and shows the template again; a
// change the status does not allow is shown on the template's page.
func (c *Console) templateChange(fn func(*templates.Service, context.Context, quan.Identity, int64) (*quan.Template, error)) pageFunc {
	return func(w http.ResponseWriter, r *http.Request, s *session) error {
		id, err := pathID(r)
		if err != nil {
			return err
		}
		done := "done=status"
		if _, err := fn(c.Templates, r.Context(), s.Who, id); err != nil {
			switch quan.ErrorCode(err) {
			case quan.ETRANSITION, quan.ECONFLICT, quan.EINVALID:
				done = "error=" + url.QueryEscape(quan.ErrorMessage(err))
			default:
				return err
			}
		}
		http.Redirect(w, r, fmt.Sprintf("%s/templates/%d?%s", Prefix, id, done), http.StatusSeeOther)
		return nil
	}
}

func (c *Console) templateStock(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	n, perr := strconv.ParseInt(strings.TrimSpace(r.PostFormValue("n")), 10, 64)
	done := fmt.Sprintf("done=stock&n=%d", n)
	switch {
	case perr != nil || n <= 0:
		done = "error=" + url.QueryEscape(fmt.Sprintf("%q is not a positive whole number", r.PostFormValue("n")))
	default:
		if _, err := c.Templates.IncreaseStock(r.Context(), s.Who, id, n); err != nil {
			switch quan.ErrorCode(err) {
			case quan.ENOTFOUND, quan.EFORBIDDEN, quan.EUNAUTHORIZED, quan.EINTERNAL:
				return err
			}
			done = "error=" + url.QueryEscape(quan.ErrorMessage(err))
		}
	}
	http.Redirect(w, r, fmt.Sprintf("%s/templates/%d?%s", Prefix, id, done), http.StatusSeeOther)
	return nil
}

func (c *Console) templateEditForm(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	t, err := c.Templates.Get(r.Context(), s.Who, id)
	if err != nil {
		return err
	}
	if t.Status != quan.TemplateDraft {
		return quan.Errorf(quan.ENOTDRAFT, "template %d is %s: only drafts can be edited", id, t.Status)
	}
	v := c.newView(r, s)
	return c.showTemplateForm(w, v, http.StatusOK, "tpl.edit", formOf(v, t))
}

// formOf is the form showing t.
func formOf(v *view, t *quan.Template) templateForm {
	f := templateForm{
		ID: t.ID, Name: t.Name, Description: t.Description, Kind: string(t.Kind), Source: string(t.Source),
		Scope: string(t.Scope.Kind), IDs: strings.Join(t.Scope.IDs, ", "),
		IssueStart: v.InputTime(t.IssueStart), IssueEnd: v.InputTime(t.IssueEnd),
		Validity: string(t.Validity.Kind), ValidStart: v.InputTime(t.Validity.Start), ValidEnd: v.InputTime(t.Validity.End),
		PerUserLimit: strconv.FormatInt(t.PerUserLimit, 10), Stock: strconv.FormatInt(t.Stock, 10),
		CodePrefix: t.CodePrefix, ShopNo: strconv.FormatInt(t.ShopNo, 10), Example: "100",
		Stacking: string(cmp.Or(t.Stacking, quan.StackAny)), Priority: strconv.FormatInt(t.Priority, 10),
		Eligibility: t.Eligibility, Applies: t.Applies,
		PromoCode: t.PromoCode,
		LogoURL:   t.LogoURL, Category: t.Category, Goods: strings.Join(t.Goods, "\n"),
		Instructions: t.Instructions, Metadata: metadataText(t.Metadata),
	}
	money := func(n int64) string {
		if n == 0 {
			return ""
		}
		return yuan(n)
	}
	f.Amount, f.Threshold, f.Cap, f.Step = money(t.Rule.Amount), money(t.Rule.Threshold), money(t.Rule.Cap), money(t.Rule.Step)
	if t.Rule.Rate > 0 {
		f.Rate = strconv.FormatInt(t.Rule.Rate, 10)
	}
	if t.Validity.Hours > 0 {
		f.ValidHours = strconv.FormatInt(t.Validity.Hours, 10)
	}
	f.Budget = money(t.Budget)
	if t.PerUserDaily > 0 {
		f.PerUserDaily = strconv.FormatInt(t.PerUserDaily, 10)
	}
	if t.PerUserWeekly > 0 {
		f.PerUserWeekly = strconv.FormatInt(t.PerUserWeekly, 10)
	}
	return f
}

func (c *Console) templateEdit(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	v := c.newView(r, s)
	f := readTemplateForm(r)
	f.ID = id
	spec, stock, _, bad := f.spec(v)
	if len(bad) > 0 {
		v.setError(invalid(bad), templateInputs...)
		return c.showTemplateForm(w, v, http.StatusBadRequest, "tpl.edit", f)
	}
	_, err = c.Templates.Edit(r.Context(), s.Who, id, func(e *templates.Edit) error {
		// The form does not show the reminders: they stay as they are.
		spec.RemindBefore, spec.RemindChannels, spec.RemindLead = e.RemindBefore, e.RemindChannels, e.RemindLead
		e.TemplateSpec, e.Stock = spec, stock
		return nil
	})
	if err != nil {
		switch quan.ErrorCode(err) {
		case quan.EINVALID, quan.ENOTDRAFT:
			v.setError(err, templateInputs...)
			return c.showTemplateForm(w, v, statusOfForm(err), "tpl.edit", f)
		}
		return err
	}
	http.Redirect(w, r, fmt.Sprintf("%s/templates/%d?done=saved", Prefix, id), http.StatusSeeOther)
	return nil
}

func statusOfForm(err error) int {
	if quan.ErrorCode(err) == quan.EINVALID {
		return http.StatusBadRequest
	}
	return http.StatusConflict
}

// ruleText describes t's rule in the operator's language.
func (v *view) RuleText(t *quan.Template) string {
	r := t.Rule
	switch t.Kind {
	case quan.KindDirect:
		return v.T("tpl.rule.direct", yuan(r.Amount))
	case quan.KindThreshold:
		if v.Lang == "en" {
			return v.T("tpl.rule.thresh", yuan(r.Amount), yuan(r.Threshold))
		}
		return v.T("tpl.rule.thresh", yuan(r.Threshold), yuan(r.Amount))
	case quan.KindDiscount:
		var s string
		if v.Lang == "en" {
			s = v.T("tpl.rule.disc", strconv.FormatInt(r.Rate, 10))
		} else {
			s = v.T("tpl.rule.disc", strconv.FormatFloat(float64(r.Rate)/10, 'f', -1, 64))
		}
		if r.Threshold > 0 {
			s += v.T("tpl.ruleFrom", yuan(r.Threshold))
		}
		if r.Cap > 0 {
			s += v.T("tpl.ruleCap", yuan(r.Cap))
		}
		return s
	case quan.KindStep:
		if v.Lang == "en" {
			return v.T("tpl.rule.step", yuan(r.Amount), yuan(r.Step), yuan(r.Cap))
		}
		return v.T("tpl.rule.step", yuan(r.Step), yuan(r.Amount), yuan(r.Cap))
	case quan.KindComposite:
		rate := strconv.FormatInt(r.Rate, 10)
		if v.Lang != "en" {
			rate = strconv.FormatFloat(float64(r.Rate)/10, 'f', -1, 64)
		}
		s := v.T("tpl.rule.comp", yuan(r.Threshold), yuan(r.Amount), rate)
		if r.Cap > 0 {
			s += v.T("tpl.ruleCap", yuan(r.Cap))
		}
		return s
	}
	return string(t.Kind)
}

// ActionText names an audit action in the operator's language.
func (v *view) ActionText(action string) string {
	switch action {
	case quan.ActionCreate:
		return v.T("action.create")
	case quan.ActionUpdate:
		return v.T("action.edit")
	case quan.ActionStock:
		return v.T("action.stock")
	case quan.ActionExpire:
		return v.T("action.end")
	}
	return v.T("action." + action)
}
