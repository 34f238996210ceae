package quantest

import (
	"slices"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/notify"
)

// testImportContacts: an import creates contacts and updates the phone,
// mail and language of those on file where the row has one, keeps what a
// blank leaves, never touches opt-outs, and goes again to the same end.
func testImportContacts(t *testing.T, s NotifyStores) {
	ctx := t.Context()
	at := notifyNow
	// User 1 has a full contact and opted out of email.
	if _, err := s.Contacts.UpdateContact(ctx, 1, at, func(c *quan.Contact) error {
		c.Phone, c.Mail, c.Lang, c.OptOut = "+8613800000001", "one@example.com", quan.LangEN, []quan.NotifyType{quan.NotifyEmail}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rows := []quan.ContactRow{
		{UserID: 1, Phone: "+8613900000001"},                          // new phone; mail, language, opt-out kept
		{UserID: 2, Mail: "two@example.com"},                          // a new contact: zh
		{UserID: 3, Phone: "+447911123456", Lang: quan.LangEN},        // a new contact in English
		{UserID: 4, Phone: "+8613900000004", Mail: "four@example.cn"}, // both
	}
	// More than one statement's worth, to cross the adapters' batches.
	for u := int64(100); u < 2600; u++ {
		rows = append(rows, quan.ContactRow{UserID: u, Phone: "+86139" + pad8(u)})
	}
	later := at.Add(time.Hour)
	for round := range 2 {
		n, err := s.Contacts.ImportContacts(ctx, later, rows)
		if err != nil || n != len(rows) {
			t.Fatalf("round %d: ImportContacts = %d, %v; want %d", round, n, err, len(rows))
		}
		users := []int64{1, 2, 3, 4, 100, 2599, 2600}
		m, err := s.Contacts.Contacts(ctx, users)
		if err != nil {
			t.Fatal(err)
		}
		want := map[int64]quan.Contact{
			1:    {UserID: 1, Phone: "+8613900000001", Mail: "one@example.com", Lang: quan.LangEN, OptOut: []quan.NotifyType{quan.NotifyEmail}},
			2:    {UserID: 2, Mail: "two@example.com", Lang: quan.LangZH, OptOut: []quan.NotifyType{}},
			3:    {UserID: 3, Phone: "+447911123456", Lang: quan.LangEN, OptOut: []quan.NotifyType{}},
			4:    {UserID: 4, Phone: "+8613900000004", Mail: "four@example.cn", Lang: quan.LangZH, OptOut: []quan.NotifyType{}},
			100:  {UserID: 100, Phone: "+8613900000100", Lang: quan.LangZH, OptOut: []quan.NotifyType{}},
			2599: {UserID: 2599, Phone: "+8613900002599", Lang: quan.LangZH, OptOut: []quan.NotifyType{}},
		}
		if len(m) != len(want) {
			t.Errorf("round %d: %d contacts of %v, want %d", round, len(m), users, len(want))
		}
		for u, w := range want {
			got := m[u]
			if got == nil || got.Phone != w.Phone || got.Mail != w.Mail || got.Lang != w.Lang || !slices.Equal(got.OptOut, w.OptOut) ||
				!got.UpdatedAt.Equal(later) {
				t.Errorf("round %d: user %d has %+v, want %+v at %v", round, u, got, w, later)
			}
		}
	}
	// A blank language keeps an English one; a row with only a language
	// changes only it.
	if _, err := s.Contacts.ImportContacts(ctx, later, []quan.ContactRow{{UserID: 3, Mail: "three@example.com"}, {UserID: 2, Lang: quan.LangEN}}); err != nil {
		t.Fatal(err)
	}
	m, err := s.Contacts.Contacts(ctx, []int64{2, 3})
	if err != nil {
		t.Fatal(err)
	}
	if c := m[3]; c == nil || c.Lang != quan.LangEN || c.Phone != "+447911123456" || c.Mail != "three@example.com" {
		t.Errorf("user 3 after a row without a language: %+v", c)
	}
	if c := m[2]; c == nil || c.Lang != quan.LangEN || c.Mail != "two@example.com" || c.Phone != "" {
		t.Errorf("user 2 after a row with only a language: %+v", c)
	}
	if n, err := s.Contacts.ImportContacts(ctx, later, nil); n != 0 || err != nil {
		t.Errorf("ImportContacts of nothing = %d, %v", n, err)
	}
}

// pad8 is u in 8 digits.
func pad8(u int64) string {
	b := []byte("00000000")
	for i := 7; i >= 0 && u > 0; i-- {
		b[i] = byte('0' + u%10)
		u /= 10
	}
	return string(b)
}

// BenchmarkImportContacts stores 100,000 contacts (a phone and a mail
// each) on a fresh store, quan.ContactImportBatch rows a call as a
// contacts import does, and reports the rows stored a second.
func BenchmarkImportContacts(b *testing.B, newContacts func(b *testing.B) quan.ContactStore) {
	const rows = 100_000
	all := make([]quan.ContactRow, rows)
	for i := range all {
		u := int64(1_000_000 + i)
		all[i] = quan.ContactRow{UserID: u, Phone: "+86138" + pad8(int64(i)), Mail: "user" + pad8(int64(i)) + "@example.com"}
	}
	for b.Loop() {
		b.StopTimer()
		s := newContacts(b)
		b.StartTimer()
		for start := 0; start < rows; start += notify.ContactImportBatch {
			if _, err := s.ImportContacts(b.Context(), notifyNow, all[start:min(start+notify.ContactImportBatch, rows)]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
}
