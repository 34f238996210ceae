package http

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/quanhq/quan"
)

// MinSecretLen is the shortest HS256 signing secret accepted, in bytes.
const MinSecretLen = 32

const tokenIssuer = "quan"

// Tokens mints and verifies HS256 bearer tokens that carry an Identity.
type Tokens struct {
	secret []byte
	now    func() time.Time
}

// NewTokens returns Tokens signing with secret, which must be at least
// MinSecretLen bytes. now may be nil (time.Now).
func NewTokens(secret []byte, now func() time.Time) (*Tokens, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("token secret is %d bytes; it needs at least %d", len(secret), MinSecretLen)
	}
	if now == nil {
		now = time.Now
	}
	return &Tokens{secret: secret, now: now}, nil
}

type claims struct {
	Role   quan.Role `json:"role"`
	ShopNo int64     `json:"shop,omitempty"`
	UserID int64     `json:"uid,omitempty,string"`
	jwt.RegisteredClaims
}

// Mint returns a token for id that expires after ttl.
func (t *Tokens) Mint(id quan.Identity, ttl time.Duration) (string, error) {
	if err := id.Validate(); err != nil {
		return "", err
	}
	if ttl <= 0 {
		return "", fmt.Errorf("token lifetime must be positive, got %s", ttl)
	}
	now := t.now()
	sub := id.Subject
	if sub == "" {
		sub = id.String()
	}
	c := claims{
		Role:   id.Role,
		ShopNo: id.ShopNo,
		UserID: id.UserID,
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    tokenIssuer,
			Subject:   sub,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(t.secret)
	if err != nil {
		return "", fmt.Errorf("sign token: %w", err)
	}
	return s, nil
}

// Verify checks a token's signature, algorithm, issuer and expiry and
// returns its identity. Any failure is an EUNAUTHORIZED *quan.Error.
func (t *Tokens) Verify(token string) (quan.Identity, error) {
	var c claims
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return t.secret, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(tokenIssuer),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(t.now),
	)
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return quan.Identity{}, quan.Errorf(quan.EUNAUTHORIZED, "the token has expired")
	case err != nil:
		return quan.Identity{}, quan.Errorf(quan.EUNAUTHORIZED, "the token is invalid")
	}
	id := quan.Identity{Subject: c.Subject, Role: c.Role, ShopNo: c.ShopNo, UserID: c.UserID}
	if err := id.Validate(); err != nil {
		return quan.Identity{}, err
	}
	return id, nil
}

// authenticate puts the bearer token's identity into the request context.
// A request without a token goes on anonymous; handlers that need an
// identity refuse it with 401. A bad token is refused here.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		if h == "" {
			next.ServeHTTP(w, r)
			return
		}
		scheme, token, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
			s.writeError(w, r, quan.Errorf(quan.EUNAUTHORIZED, "the Authorization header must be 'Bearer <token>'"))
			return
		}
		id, err := s.Tokens.Verify(strings.TrimSpace(token))
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(quan.NewContextWithIdentity(r.Context(), id)))
	})
}

// identity returns the caller's identity, or EUNAUTHORIZED if anonymous.
func identity(r *http.Request) (quan.Identity, error) {
	id := quan.IdentityFromContext(r.Context())
	if id.Role == "" {
		return id, quan.Errorf(quan.EUNAUTHORIZED, "this needs a bearer token")
	}
	return id, nil
}
