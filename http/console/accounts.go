package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/accounts"
)

// accountRoutes registers the account pages, for admins: the service
// refuses anyone else.
func (c *Console) accountRoutes(page func(string, pageFunc)) {
	page("GET "+Prefix+"/accounts", c.accountList)
	page("POST "+Prefix+"/accounts", c.accountCreate)
	page("POST "+Prefix+"/accounts/{id}/disable", c.accountDisable(true))
	page("POST "+Prefix+"/accounts/{id}/enable", c.accountDisable(false))
	page("POST "+Prefix+"/accounts/{id}/password", c.accountPassword)
}

type accountListData struct {
	Items       []*quan.Account
	Total       int
	Page, Pages int
	Query       string
	Prev, Next  string
	New         accountForm // the creation form, as typed
}

type accountForm struct{ Name, Role, ShopNo string }

var accountInputs = []string{"name", "role", "shopNo", "password"}

func (c *Console) accountList(w http.ResponseWriter, r *http.Request, s *session) error {
	v := c.newView(r, s)
	switch q := r.URL.Query(); {
	case q.Get("done") != "":
		v.Notice = v.T("acct.done."+q.Get("done"), q.Get("name"))
	case q.Get("error") != "":
		v.Error = q.Get("error")
	}
	return c.showAccounts(w, r, s, v, http.StatusOK, accountForm{Role: string(quan.RoleMerchant)})
}

func (c *Console) showAccounts(w http.ResponseWriter, r *http.Request, s *session, v *view, status int, f accountForm) error {
	q := r.URL.Query()
	d := accountListData{Query: strings.TrimSpace(q.Get("q")), New: f}
	var err error
	if d.Page, err = pageNumber(q); err != nil {
		return err
	}
	items, total, err := c.Accounts.List(r.Context(), s.Who, quan.AccountFilter{
		NameContains: d.Query, Offset: (d.Page - 1) * listPageSize, Limit: listPageSize})
	if err != nil {
		return err
	}
	d.Items, d.Total = items, total
	d.Pages = max(1, (total+listPageSize-1)/listPageSize)
	link := func(page int) string {
		v := url.Values{"page": {strconv.Itoa(page)}}
		if d.Query != "" {
			v.Set("q", d.Query)
		}
		return Prefix + "/accounts?" + v.Encode()
	}
	if d.Page > 1 {
		d.Prev = link(d.Page - 1)
	}
	if d.Page < d.Pages {
		d.Next = link(d.Page + 1)
	}
	v.Title = v.T("acct.title")
	v.Data = d
	c.renderView(w, status, "accounts", v)
	return nil
}

func (c *Console) accountCreate(w http.ResponseWriter, r *http.Request, s *session) error {
	f := accountForm{Name: strings.TrimSpace(r.PostFormValue("name")), Role: r.PostFormValue("role"), ShopNo: strings.TrimSpace(r.PostFormValue("shopNo"))}
	in := accounts.NewAccount{Name: f.Name, Role: quan.Role(f.Role), Password: r.PostFormValue("password")}
	var err error
	if f.ShopNo != "" {
		if in.ShopNo, err = strconv.ParseInt(f.ShopNo, 10, 64); err != nil {
			err = &quan.Error{Code: quan.EINVALID, Message: "invalid account",
				Fields: []quan.FieldError{{Field: "shopNo", Message: fmt.Sprintf("%q is not a shop number", f.ShopNo)}}}
		}
	}
	if err == nil {
		_, err = c.Accounts.Add(r.Context(), s.Who, in)
	}
	switch quan.ErrorCode(err) {
	case "":
		http.Redirect(w, r, Prefix+"/accounts?done=created&name="+url.QueryEscape(f.Name), http.StatusSeeOther)
		return nil
	case quan.EINVALID, quan.ECONFLICT:
		v := c.newView(r, s)
		v.setError(err, accountInputs...)
		if quan.ErrorCode(err) == quan.ECONFLICT {
			v.Fields = map[string]string{"name": quan.ErrorMessage(err)}
		}
		return c.showAccounts(w, r, s, v, statusOfForm(err), f)
	}
	return err
}

func (c *Console) accountDisable(disabled bool) pageFunc {
	return func(w http.ResponseWriter, r *http.Request, s *session) error {
		id, err := pathID(r)
		if err != nil {
			return err
		}
		a, err := c.Accounts.SetDisabled(r.Context(), s.Who, id, disabled)
		done := "disabled"
		if !disabled {
			done = "enabled"
		}
		return c.accountDone(w, r, s, a, done, err)
	}
}

func (c *Console) accountPassword(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	a, err := c.Accounts.ResetPassword(r.Context(), s.Who, id, r.PostFormValue("password"))
	return c.accountDone(w, r, s, a, "password", err)
}

// accountDone goes back to the list, saying what was done, or why not
// when an admin's change was refused (a password too short, disabling
// itself). Anyone else's refusal is an error page.
func (c *Console) accountDone(w http.ResponseWriter, r *http.Request, s *session, a *quan.Account, done string, err error) error {
	switch code := quan.ErrorCode(err); {
	case code == "":
		http.Redirect(w, r, Prefix+"/accounts?done="+done+"&name="+url.QueryEscape(a.Name), http.StatusSeeOther)
		return nil
	case s.Who.Role == quan.RoleAdmin && (code == quan.EINVALID || code == quan.EFORBIDDEN):
		http.Redirect(w, r, Prefix+"/accounts?error="+url.QueryEscape(problem(err)), http.StatusSeeOther)
		return nil
	}
	return err
}

// problem is err's message with the problem of each field.
func problem(err error) string {
	var qe *quan.Error
	if !errors.As(err, &qe) {
		return quan.ErrorMessage(err)
	}
	msg := qe.Message
	for _, f := range qe.Fields {
		msg += "; " + f.Field + ": " + f.Message
	}
	return msg
}
