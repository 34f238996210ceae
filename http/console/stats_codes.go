package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/quanhq/quan"
)

type codesData struct {
	T       *quan.Template
	Batches []*quan.CodeBatch
	Count   string // the form's count as typed
	XLSX    bool   // whether batches export as .xlsx too
}

func (c *Console) codesPage(w http.ResponseWriter, r *http.Request, s *session) error {
	return c.showCodes(w, r, s, http.StatusOK, "100", nil)
}

// showCodes renders template id's code page with the form's count; err,
// a refusal of the form, is shown with status.
func (c *Console) showCodes(w http.ResponseWriter, r *http.Request, s *session, status int, count string, err error) error {
	id, perr := pathID(r)
	if perr != nil {
		return perr
	}
	t, gerr := c.Templates.Get(r.Context(), s.Who, id)
	if gerr != nil {
		return gerr
	}
	batches, lerr := c.Codes.List(r.Context(), s.Who, id)
	if lerr != nil {
		return lerr
	}
	v := c.newView(r, s)
	v.Title = v.T("codes.title", t.Name)
	if err != nil {
		v.setError(err, "count")
	}
	v.Data = codesData{T: t, Batches: batches, Count: count, XLSX: c.CodesExport != nil}
	c.renderView(w, status, "codes", v)
	return nil
}

// codesCreate starts a batch of n codes and shows its progress.
func (c *Console) codesCreate(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	count := strings.TrimSpace(r.PostFormValue("count"))
	n, perr := strconv.ParseInt(count, 10, 64)
	if perr != nil {
		return c.showCodes(w, r, s, http.StatusBadRequest, count, &quan.Error{Code: quan.EINVALID, Message: "invalid code batch",
			Fields: []quan.FieldError{{Field: "count", Message: strconv.Quote(count) + " is not a whole number"}}})
	}
	b, err := c.Codes.Create(r.Context(), s.Who, id, n)
	if err != nil {
		switch quan.ErrorCode(err) {
		case quan.EINVALID:
			return c.showCodes(w, r, s, http.StatusBadRequest, count, err)
		case quan.ETRANSITION:
			return c.showCodes(w, r, s, http.StatusConflict, count, err)
		}
		return err
	}
	http.Redirect(w, r, fmt.Sprintf("%s/code-batches/%d?done=created", Prefix, b.ID), http.StatusSeeOther)
	return nil
}

type batchData struct {
	B    *quan.CodeBatch
	T    *quan.Template
	XLSX bool
}

func (c *Console) batchPage(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	b, err := c.Codes.Get(r.Context(), s.Who, id)
	if err != nil {
		return err
	}
	t, err := c.Templates.Get(r.Context(), s.Who, b.TemplateID)
	if err != nil {
		return err
	}
	v := c.newView(r, s)
	v.Title = v.T("codes.batchTitle", b.ID)
	if r.URL.Query().Get("done") == "created" {
		v.Notice = v.T("codes.created", b.Count)
	}
	v.Data = batchData{B: b, T: t, XLSX: c.CodesExport != nil}
	c.renderView(w, http.StatusOK, "codes_batch", v)
	return nil
}

// batchEvents streams batch id's progress until it is ready.
func (c *Console) batchEvents(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	if _, err := c.Codes.Get(r.Context(), s.Who, id); err != nil {
		return err
	}
	ch, cancel := c.stats.batches.Watch(r.Context(), id)
	defer cancel()
	if err := ServeEvents(w, r, ch, "snapshot", func(b *quan.CodeBatch) ([]byte, error) { return json.Marshal(b) }); err != nil {
		c.logger().Warn("console code batch stream", "batch", id, "err", err)
	}
	return nil
}

// batchExport serves a ready batch's codes as .csv, or .xlsx when the
// console has a CodesExport: the files the API serves.
func (c *Console) batchExport(xlsx bool) pageFunc {
	return func(w http.ResponseWriter, r *http.Request, s *session) error {
		id, err := pathID(r)
		if err != nil {
			return err
		}
		if xlsx && c.CodesExport == nil {
			return quan.Errorf(quan.ENOTFOUND, "no .xlsx export here: download the .csv")
		}
		b, codes, err := c.Codes.Export(r.Context(), s.Who, id)
		if err != nil {
			return err
		}
		name := fmt.Sprintf("codes-%d", b.ID)
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		if xlsx {
			h.Set("Content-Type", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
			h.Set("Content-Disposition", `attachment; filename="`+name+`.xlsx"`)
			err = c.CodesExport.Write(r.Context(), w, codes)
		} else {
			h.Set("Content-Type", "text/csv; charset=utf-8")
			h.Set("Content-Disposition", `attachment; filename="`+name+`.csv"`)
			err = quan.WriteCodesCSV(w, codes)
		}
		if err != nil {
			// The file has begun: all that can be done is to log it.
			c.logger().Warn("console export codes", "batch", id, "err", err)
		}
		return nil
	}
}
