package notify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"

	"github.com/quanhq/quan"
)

// UnsubscribeKey signs the tokens of the unsubscribe links mails carry
// and checks them when a link is followed. Every process of a deployment
// must hold the same key (the wiring keeps it in the store: SecretStore,
// SecretUnsubscribe), or a link one process signed fails on another.
type UnsubscribeKey []byte

// Token returns the token of the message with Outgoing.ID id:
// "ID.SIGNATURE", the id naming the user and the channel
// (Notification.MessageID), the signature 32 hex digits of HMAC-SHA256.
func (k UnsubscribeKey) Token(id string) string {
	return id + "." + k.sign(id)
}

func (k UnsubscribeKey) sign(id string) string {
	h := hmac.New(sha256.New, k)
	h.Write([]byte("unsubscribe\x00" + id))
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Check verifies token and returns the user and channel it unsubscribes.
// EINVALID, saying what is wrong, for a token that is malformed or not
// signed with k.
func (k UnsubscribeKey) Check(token string) (user int64, ch quan.NotifyType, err error) {
	bad := func(why string) (int64, quan.NotifyType, error) {
		return 0, "", quan.Errorf(quan.EINVALID, "unsubscribe link: %s; open the link of the mail as it was sent, or set your preferences in the app", why)
	}
	if len(k) == 0 {
		return bad("this server has no unsubscribe key")
	}
	id, sig, ok := cutLast(token, ".")
	if !ok || id == "" || len(token) > quan.MaxOutgoingID+40 {
		return bad("the token is missing or malformed")
	}
	if !hmac.Equal([]byte(sig), []byte(k.sign(id))) {
		return bad("the token's signature does not match (altered or cut short)")
	}
	// id is source_user_channel, the source with '.' for ':' and no '_'.
	parts := strings.Split(id, "_")
	if len(parts) != 3 {
		return bad("the token names no message")
	}
	user, err = strconv.ParseInt(parts[1], 10, 64)
	ch = quan.NotifyType(parts[2])
	if err != nil || user <= 0 || ch != quan.NotifyEmail && ch != quan.NotifySMS {
		return bad("the token names no user's email or SMS")
	}
	return user, ch, nil
}

func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

// Unsubscribe opts the user a mail's unsubscribe token names out of the
// token's channel, and returns the contact as saved and the channel. It
// needs no identity: the token, signed with s.UnsubscribeKey, is the
// authority. Following a link twice is no error. EINVALID for a token
// Check refuses.
func (s *Service) Unsubscribe(ctx context.Context, token string) (*quan.Contact, quan.NotifyType, error) {
	user, ch, err := s.UnsubscribeKey.Check(token)
	if err != nil {
		return nil, "", err
	}
	c, err := s.Contacts.UpdateContact(ctx, user, s.Now.UTC(), func(c *quan.Contact) error {
		if !slices.Contains(c.OptOut, ch) {
			c.OptOut = append(c.OptOut, ch)
			slices.Sort(c.OptOut)
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return c, ch, nil
}
