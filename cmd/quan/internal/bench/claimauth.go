package bench

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/cmd/quan/internal/app"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
	qhttp "github.com/quanhq/quan/http"
)

// authKinds are how bench claim's requests authenticate: hs256, each
// shopper's token minted with the server's secret as quan token does;
// rs256 and es256, signed by an identity provider the bench makes up (a
// new key pair, its JWKS in a file the server reads, as quan serve
// --jwt-jwks FILE); key, one platform service key of scope claims sent by
// every request, naming its user in the body (keyClaimLoad).
var authKinds = []string{"hs256", "rs256", "es256", "key"}

// benchIssuer and benchAudience are what the made-up provider's tokens
// carry and the server checks.
const (
	benchIssuer   = "https://id.bench.invalid"
	benchAudience = "quan-bench"
)

func (b *claimBench) registerAuth(fs *flag.FlagSet) {
	fs.StringVar(&b.Auth, "auth", "hs256", "how the claims authenticate: hs256 (each shopper's token, quan token's), rs256 or es256 (a made-up identity provider's, verified against its JWKS as with quan serve --jwt-jwks), or key (one platform service key of scope claims, the user in the body as {\"userId\": N}); several, comma-separated (hs256,rs256,es256), run each in turn --rounds times, the order turning each round, and print their medians side by side")
	fs.BoolVar(&b.WarmTokens, "warm-tokens", false, "verify every shopper's token once before the load, as when the shoppers' apps used them before the sale (default: each token's first request verifies it in full)")
}

// authList returns the kinds --auth names.
func (b *claimBench) authList() []string { return strings.Split(b.Auth, ",") }

func (b *claimBench) validateAuth() error {
	kinds := b.authList()
	for i, k := range kinds {
		if !slices.Contains(authKinds, k) {
			return cli.Usagef("bench claim: --auth %q: want %s, or several of them comma-separated", k, strings.Join(authKinds, ", "))
		}
		if slices.Contains(kinds[:i], k) {
			return cli.Usagef("bench claim: --auth names %s twice", k)
		}
	}
	if len(kinds) > 1 && (b.MetricsCompare || b.Ceiling || b.CPUProfile != "") {
		return cli.Usagef("bench claim: --auth with several kinds runs the claims several times: run --metrics-compare, --ceiling and --cpuprofile without it")
	}
	return nil
}

// benchAuth is how the shoppers of one run prove who they are.
type benchAuth struct {
	kind   string // one of authKinds
	signer crypto.Signer
	method jwt.SigningMethod
	jwks   string // the JWKS file, for rs256 and es256

	signed []string // the tokens signed so far, for rs256 and es256: reused run after run
}

// authFor returns the auth of the run: the one compareAuth made for the
// kind, which keeps its key and tokens from run to run (RSA signing takes
// minutes for a run's users), or a new one with its JWKS in dir.
func (b *claimBench) authFor(dir string) (*benchAuth, error) {
	if a := b.auths[b.Auth]; a != nil {
		return a, nil
	}
	return newBenchAuth(b.Auth, dir)
}

// newBenchAuth makes the key pair of kind (RSA 2048 or P-256) and writes
// its JWKS in dir; hs256 needs neither.
func newBenchAuth(kind, dir string) (*benchAuth, error) {
	a := &benchAuth{kind: kind}
	if kind == "hs256" || kind == "key" {
		return a, nil
	}
	b64 := base64.RawURLEncoding.EncodeToString
	var jwk map[string]any
	switch kind {
	case "rs256":
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return nil, err
		}
		a.signer, a.method = k, jwt.SigningMethodRS256
		jwk = map[string]any{"kty": "RSA", "kid": "bench", "alg": "RS256", "use": "sig", "n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes())}
	case "es256":
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		p, err := k.PublicKey.Bytes()
		if err != nil {
			return nil, err
		}
		a.signer, a.method = k, jwt.SigningMethodES256
		jwk = map[string]any{"kty": "EC", "kid": "bench", "alg": "ES256", "use": "sig", "crv": "P-256", "x": b64(p[1:33]), "y": b64(p[33:])}
	default:
		return nil, fmt.Errorf("unknown --auth %q", kind)
	}
	set, err := json.Marshal(map[string]any{"keys": []any{jwk}})
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	a.jwks = filepath.Join(dir, "bench-jwks-"+kind+".json")
	if err := os.WriteFile(a.jwks, set, 0o600); err != nil {
		return nil, fmt.Errorf("write the JWKS: %w", err)
	}
	return a, nil
}

// trust makes tokens take the provider's tokens (and refuse HS256 ones),
// as quan serve --jwt-jwks does; nothing for hs256.
func (a *benchAuth) trust(ctx context.Context, tokens *qhttp.Tokens) error {
	if a.jwks == "" {
		return nil
	}
	j, err := qhttp.NewJWKS(ctx, qhttp.JWKSConfig{Source: a.jwks, Issuer: benchIssuer, Audience: benchAudience})
	if err != nil {
		return err
	}
	tokens.UseJWKS(j)
	return nil
}

// mintAll returns a bearer token for each user 1 … n: minted by tokens
// for hs256, signed with the provider's key (on every core: RSA signing
// is slow) otherwise.
func (a *benchAuth) mintAll(tokens *qhttp.Tokens, n int) ([]string, error) {
	if a.kind != "hs256" && len(a.signed) >= n {
		return a.signed[:n], nil
	}
	out := make([]string, n)
	now := time.Now()
	sign := func(i int) (string, error) {
		if a.kind == "hs256" {
			return tokens.Mint(quan.Identity{Role: quan.RoleUser, UserID: int64(i) + 1}, 24*time.Hour)
		}
		t := jwt.NewWithClaims(a.method, jwt.MapClaims{"iss": benchIssuer, "aud": benchAudience,
			"sub": strconv.Itoa(i + 1), "iat": now.Unix(), "exp": now.Add(24 * time.Hour).Unix()})
		t.Header["kid"] = "bench"
		return t.SignedString(a.signer)
	}
	var wg sync.WaitGroup
	errs := make([]error, runtime.GOMAXPROCS(0))
	for w := range errs {
		wg.Go(func() {
			for i := w; i < n; i += len(errs) {
				tok, err := sign(i)
				if err != nil {
					errs[w] = fmt.Errorf("bench claim: mint a token: %w", err)
					return
				}
				out[i] = tok
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if a.kind != "hs256" {
		a.signed = out
	}
	return out, nil
}

// authWords says how a run of kind authenticates.
func authWords(kind string) string {
	if kind == "key" {
		return "one platform service key of scope claims, each body naming its user"
	}
	return kind + " tokens"
}

func warmed(warm bool) string {
	if warm {
		return ", each verified once before the load"
	}
	return ""
}

// warmTokens verifies every token once, as the server would on each shopper's
// first request, so that the load meets them remembered.
func warmTokens(tokens *qhttp.Tokens, auth [][]string) error {
	for _, h := range auth {
		if _, err := tokens.Verify(strings.TrimPrefix(h[0], "Bearer ")); err != nil {
			return fmt.Errorf("bench claim: warm the tokens: %w", err)
		}
	}
	return nil
}

// compareAuth runs the claim phase Rounds times for each kind --auth
// names, the order turning each round (hs256, rs256, es256, then rs256,
// es256, hs256, …), each on a server of its own (in a folder of its own
// when the bench made the data folder: ownDir), and prints each kind's
// medians beside the first kind's, with the ratio.
func (c *Command) compareAuth(ctx context.Context, b *claimBench, cfg app.Config, ownDir bool) error {
	out := c.Stdout
	kinds := b.authList()
	b.auths = map[string]*benchAuth{}
	for _, k := range kinds {
		a, err := newBenchAuth(k, cfg.DataDir)
		if err != nil {
			return fmt.Errorf("bench claim: %w", err)
		}
		b.auths[k] = a
	}
	runs := map[string][]*loadResult{}
	n, total := 0, len(kinds)*b.Rounds
	for round := range b.Rounds {
		for i := range kinds {
			kind := kinds[(i+round)%len(kinds)]
			n++
			rc := cfg
			if ownDir {
				rc.DataDir = filepath.Join(cfg.DataDir, fmt.Sprintf("run-%d", n))
			}
			fmt.Fprintf(out, "bench claim: run %d of %d: --auth %s\n", n, total, kind)
			rb := *b
			rb.Auth = kind
			srv, _, res, err := c.claimPhase(ctx, &rb, rc)
			if err != nil {
				return err
			}
			if err := srv.Close(); err != nil {
				return fmt.Errorf("bench claim: stop the server: %w", err)
			}
			runs[kind] = append(runs[kind], res)
		}
	}
	base, baseCPU := summarizeRuns(runs[kinds[0]]), quanCPU(runs[kinds[0]])
	for _, k := range kinds {
		fmt.Fprintf(out, "bench claim: --auth %s: %s, quan's CPU %.0f µs a request\n", k, summarizeRuns(runs[k]), quanCPU(runs[k]))
	}
	for _, k := range kinds[1:] {
		s, cpu := summarizeRuns(runs[k]), quanCPU(runs[k])
		fmt.Fprintf(out, "bench claim: %s/%s %.3f× requests/s (%s costs %.1f%%), %.3f× accepted claims/s, p99 %s against %s; quan's CPU a request %.0f µs against %.0f µs (%+.1f%%) (medians of %d runs each, warm tokens %v, %d cores)\n",
			k, kinds[0], s.reqs/base.reqs, k, 100*(1-s.reqs/base.reqs), s.claims/base.claims, fmtLatency(s.p99), fmtLatency(base.p99),
			cpu, baseCPU, 100*(cpu/baseCPU-1), b.Rounds, b.WarmTokens, runtime.NumCPU())
	}
	return nil
}

// quanCPU is the median over rs of the CPU this process (server and load
// generator) used a request: on a machine shared with other work it moves
// far less than requests/s do. 0 where the CPU was not sampled.
func quanCPU(rs []*loadResult) float64 {
	var us []float64
	for _, r := range rs {
		for _, u := range r.CPU {
			if u.name == "quan" && r.Sent > 0 {
				us = append(us, float64(u.used.Microseconds())/float64(r.Sent))
			}
		}
	}
	if len(us) == 0 {
		return 0
	}
	return median(us)
}
