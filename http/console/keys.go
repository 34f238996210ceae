package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/apikeys"
)

// Keys makes, lists and revokes service keys for admins; apikeys.Service
// is one.
type Keys interface {
	Create(ctx context.Context, who quan.Identity, in apikeys.NewKey) (*quan.APIKey, string, error)
	List(ctx context.Context, who quan.Identity) ([]*quan.APIKey, error)
	Revoke(ctx context.Context, who quan.Identity, id int64) (*quan.APIKey, error)
}

// keyRoutes registers the service keys' page, for admins: the service
// refuses anyone else.
func (c *Console) keyRoutes(page func(string, pageFunc)) {
	page("GET "+Prefix+"/keys", c.keyList)
	page("POST "+Prefix+"/keys", c.keyCreate)
	page("POST "+Prefix+"/keys/{id}/revoke", c.keyRevoke)
}

type keyListData struct {
	Items  []*quan.APIKey
	Scopes []quan.KeyScope
	New    keyForm
	Made   *quan.APIKey // the key just made, whose secret is shown this once
	Secret string
}

type keyForm struct {
	Name, ShopNo string
	Scopes       map[quan.KeyScope]bool
}

var keyInputs = []string{"name", "shopNo", "scopes"}

func (c *Console) keyList(w http.ResponseWriter, r *http.Request, s *session) error {
	v := c.newView(r, s)
	if q := r.URL.Query(); q.Get("done") == "revoked" {
		v.Notice = v.T("key.done.revoked", q.Get("name"))
	}
	return c.showKeys(w, r, s, v, http.StatusOK, keyListData{})
}

func (c *Console) showKeys(w http.ResponseWriter, r *http.Request, s *session, v *view, status int, d keyListData) error {
	items, err := c.Keys.List(r.Context(), s.Who)
	if err != nil {
		return err
	}
	d.Items, d.Scopes = items, quan.AllScopes()
	v.Title = v.T("key.title")
	v.Data = d
	c.renderView(w, status, "keys", v)
	return nil
}

func (c *Console) keyCreate(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := r.ParseForm(); err != nil {
		return quan.Errorf(quan.EINVALID, "read the form: %v", err)
	}
	f := keyForm{Name: strings.TrimSpace(r.PostFormValue("name")), ShopNo: strings.TrimSpace(r.PostFormValue("shopNo")), Scopes: map[quan.KeyScope]bool{}}
	in := apikeys.NewKey{Name: f.Name}
	for _, sc := range r.PostForm["scopes"] {
		f.Scopes[quan.KeyScope(sc)] = true
		in.Scopes = append(in.Scopes, quan.KeyScope(sc))
	}
	var err error
	if f.ShopNo != "" {
		if in.ShopNo, err = strconv.ParseInt(f.ShopNo, 10, 64); err != nil {
			err = &quan.Error{Code: quan.EINVALID, Message: "invalid service key",
				Fields: []quan.FieldError{{Field: "shopNo", Message: fmt.Sprintf("%q is not a shop number", f.ShopNo)}}}
		}
	}
	var (
		k      *quan.APIKey
		secret string
	)
	if err == nil {
		k, secret, err = c.Keys.Create(r.Context(), s.Who, in)
	}
	v := c.newView(r, s)
	switch quan.ErrorCode(err) {
	case "":
		// Shown in this answer, never in a URL or again.
		w.Header().Set("Cache-Control", "no-store")
		v.Notice = v.T("key.done.created", k.Name)
		return c.showKeys(w, r, s, v, http.StatusOK, keyListData{Made: k, Secret: secret})
	case quan.EINVALID:
		v.setError(err, keyInputs...)
		return c.showKeys(w, r, s, v, statusOfForm(err), keyListData{New: f})
	}
	return err
}

func (c *Console) keyRevoke(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	k, err := c.Keys.Revoke(r.Context(), s.Who, id)
	if err != nil {
		return err
	}
	http.Redirect(w, r, Prefix+"/keys?done=revoked&name="+url.QueryEscape(k.Name), http.StatusSeeOther)
	return nil
}
