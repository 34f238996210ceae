package main

import (
	"context"
	"flag"
	"log/slog"
	"strings"
	"time"

	"github.com/quanhq/quan/cmd/quan/internal/cli"
	qhttp "github.com/quanhq/quan/http"
)

// jwksFlags are quan serve's flags for shoppers' tokens signed by the
// platform's identity provider (qhttp.JWKS).
type jwksFlags struct {
	Source     string
	Issuer     string
	Audience   string
	UserClaim  string
	AllowHS256 bool
}

func (f *jwksFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.Source, "jwt-jwks", "", "verify shoppers' RS256/ES256 tokens against the JSON Web Key Set of the platform's identity provider: a file or an http(s) URL (read at start, every 10m, and on a token of an unknown kid at most every 30s); needs --jwt-issuer and --jwt-audience (default: none, HS256 tokens of --jwt-secret only)")
	fs.StringVar(&f.Issuer, "jwt-issuer", "", "with --jwt-jwks: the iss the identity provider's tokens must carry")
	fs.StringVar(&f.Audience, "jwt-audience", "", "with --jwt-jwks: an aud the identity provider's tokens must carry")
	fs.StringVar(&f.UserClaim, "jwt-user-claim", qhttp.DefaultJWTUserClaim, "with --jwt-jwks: the claim of the identity provider's tokens holding the shopper's user id, a positive whole number (JSON number or string)")
	fs.BoolVar(&f.AllowHS256, "jwt-allow-hs256", false, "with --jwt-jwks: go on accepting HS256 tokens of --jwt-secret (quan token) beside the provider's, while clients switch; quan_tokens_verified_total{kind} counts each kind")
}

func (f *jwksFlags) validate() error {
	if f.Source == "" {
		for name, set := range map[string]bool{
			"jwt-issuer":      f.Issuer != "",
			"jwt-audience":    f.Audience != "",
			"jwt-allow-hs256": f.AllowHS256,
			"jwt-user-claim":  f.UserClaim != qhttp.DefaultJWTUserClaim,
		} {
			if set {
				return cli.Usagef("serve: --%s needs --jwt-jwks", name)
			}
		}
		return nil
	}
	switch {
	case f.Issuer == "":
		return cli.Usagef("serve: --jwt-jwks needs --jwt-issuer, the iss the identity provider's tokens carry")
	case f.Audience == "":
		return cli.Usagef("serve: --jwt-jwks needs --jwt-audience, the aud the identity provider's tokens carry for quan")
	case strings.TrimSpace(f.UserClaim) == "":
		return cli.Usagef("serve: --jwt-user-claim: want a claim name")
	}
	return nil
}

// open reads the key set, or returns nil without --jwt-jwks.
func (f *jwksFlags) open(ctx context.Context, logger *slog.Logger, now func() time.Time) (*qhttp.JWKS, error) {
	if f.Source == "" {
		return nil, nil
	}
	return qhttp.NewJWKS(ctx, qhttp.JWKSConfig{
		Source:     f.Source,
		Issuer:     f.Issuer,
		Audience:   f.Audience,
		UserClaim:  f.UserClaim,
		AllowHS256: f.AllowHS256,
		Logger:     logger.With("part", "jwks"),
		Now:        now,
	})
}
