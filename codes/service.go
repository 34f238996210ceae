package codes

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"sync"
	"time"

	"github.com/quanhq/quan"
)

// Service is the merchant's and user's side of redemption codes.
type Service struct {
	Codes     quan.CodeStore
	Templates quan.TemplateStore
	Cache     quan.Cache // nil: the store alone checks and reserves
	// Rules and Facts decide the templates' eligibility rules, as
	// for claims; a nil Rules checks none.
	Rules  quan.RuleSource
	Facts  quan.FactsSource
	Now    quan.Clock
	Logger *slog.Logger
	// Chunk is how many codes are generated and stored a transaction; 0
	// means 10,000.
	Chunk int

	wg     sync.WaitGroup
	mu     sync.Mutex
	stop   chan struct{} // closed by Close: the generations stop
	closed bool
}

func (s *Service) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

// Create starts a batch of n codes for template of the merchant's shop and
// returns it generating; the codes are made in the background (Get shows
// the progress). The template must not have ended.
func (s *Service) Create(ctx context.Context, who quan.Identity, template, n int64) (*quan.CodeBatch, error) {
	shop, err := who.ShopScope()
	if err != nil {
		return nil, err
	}
	if n < 1 || n > quan.MaxCodeBatch {
		return nil, &quan.Error{Code: quan.EINVALID, Message: "invalid code batch", Fields: []quan.FieldError{{Field: "count", Message: fmt.Sprintf("must be 1 … %d", quan.MaxCodeBatch)}}}
	}
	t, err := s.Templates.Template(ctx, shop, template)
	if err != nil {
		return nil, err
	}
	if t.Status == quan.TemplateEnded {
		return nil, quan.Errorf(quan.ETRANSITION, "template %d has ended: it issues no more coupons", template)
	}
	now := s.Now.UTC()
	b := &quan.CodeBatch{TemplateID: t.ID, ShopNo: t.ShopNo, Count: n, Status: quan.CodeBatchGenerating, CreatedBy: who.String(), CreatedAt: now, UpdatedAt: now}
	if err := s.Codes.CreateCodeBatch(ctx, b); err != nil {
		return nil, err
	}
	s.Generate(b)
	return b, nil
}

// Generate makes the rest of batch b's codes in the background, until
// they are made or Close stops it; after Close it does nothing (Resume
// finishes the batch in the next process).
func (s *Service) Generate(b *quan.CodeBatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if s.stop == nil {
		s.stop = make(chan struct{})
	}
	stop := s.stop
	s.wg.Go(func() {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		if err := s.generate(ctx, b); err != nil && ctx.Err() == nil {
			s.logger().Error("generate codes", "batch", b.ID, "err", err)
		}
	})
}

// Wait waits for the generations under way to finish.
func (s *Service) Wait() { s.wg.Wait() }

// Close stops the generations under way, which keep what they stored,
// and waits for them. Safe to call twice.
func (s *Service) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		if s.stop != nil {
			close(s.stop)
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// Resume generates the batches a process that died left unfinished.
func (s *Service) Resume(ctx context.Context) error {
	bs, err := s.Codes.GeneratingCodeBatches(ctx)
	if err != nil {
		return err
	}
	for _, b := range bs {
		s.Generate(b)
	}
	return nil
}

func (s *Service) generate(ctx context.Context, b *quan.CodeBatch) error {
	chunk := int64(s.Chunk)
	if chunk <= 0 {
		chunk = 10_000
	}
	for b.Generated < b.Count {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(chunk, b.Count-b.Generated)
		for attempt := 0; ; attempt++ {
			codes, err := quan.NewCodes(int(n), "")
			if err != nil {
				return err
			}
			next, err := s.Codes.AddCodes(ctx, b.ID, codes, s.Now.UTC())
			if errors.Is(err, quan.ErrConflict) && attempt < 3 {
				continue // a code that exists: 73 random bits make it all but impossible
			}
			if err != nil {
				return err
			}
			b = next
			break
		}
	}
	s.logger().Info("codes generated", "batch", b.ID, "count", b.Count)
	return nil
}

// Get returns batch id of the merchant's shop.
func (s *Service) Get(ctx context.Context, who quan.Identity, id int64) (*quan.CodeBatch, error) {
	shop, err := who.ShopScope()
	if err != nil {
		return nil, err
	}
	return s.Codes.CodeBatch(ctx, shop, id)
}

// List returns the batches of template of the merchant's shop, newest
// first. ErrNotFound if there is no such template (or it is another
// shop's).
func (s *Service) List(ctx context.Context, who quan.Identity, template int64) ([]*quan.CodeBatch, error) {
	shop, err := who.ShopScope()
	if err != nil {
		return nil, err
	}
	if _, err := s.Templates.Template(ctx, shop, template); err != nil {
		return nil, err
	}
	return s.Codes.CodeBatches(ctx, shop, template)
}

// Export streams the codes of a ready batch of the merchant's shop.
func (s *Service) Export(ctx context.Context, who quan.Identity, id int64) (*quan.CodeBatch, iter.Seq2[quan.RedeemCode, error], error) {
	b, err := s.Get(ctx, who, id)
	if err != nil {
		return nil, nil, err
	}
	if b.Status != quan.CodeBatchReady {
		return nil, nil, quan.Errorf(quan.ETRANSITION, "batch %d is still generating: %d of %d codes made", id, b.Generated, b.Count)
	}
	return b, s.Codes.Codes(ctx, id), nil
}

// Redeem issues the user the coupon of code. A mistyped code (bad check
// symbol) is refused before anything is looked up.
func (s *Service) Redeem(ctx context.Context, who quan.Identity, code string) (*quan.Coupon, error) {
	if who.Role != quan.RoleUser {
		return nil, quan.Errorf(quan.EFORBIDDEN, "only users redeem codes")
	}
	code, err := quan.ParseCode(code)
	if err != nil {
		return nil, err
	}
	now := s.Now.UTC()
	if err := s.eligible(ctx, code, who.UserID, now); err != nil {
		return nil, fmt.Errorf("redeem code: %w", err)
	}
	c, err := s.Codes.RedeemCode(ctx, code, who.UserID, now)
	if err != nil {
		return nil, fmt.Errorf("redeem code: %w", err)
	}
	if s.Cache != nil {
		// Keep the cache's counters in step with the coupon issued: a
		// reservation under the code's key, idempotent, so a redeem
		// answered again counts once (a template the cache does not hold
		// is loaded whole when needed).
		if _, err := s.Cache.Reserve(ctx, c.TemplateID, "code:"+code, []int64{c.UserID}, c.CreatedAt); err != nil && !errors.Is(err, quan.ErrCacheCold) {
			s.logger().Warn("count a redeemed code in the cache", "template", c.TemplateID, "err", err)
		}
	}
	return c, nil
}

// eligible returns ENOTELIGIBLE if the eligibility rule of code's template
// in force at now refuses user, unless the code is redeemed already: the
// store then answers the user's own redeem again, whatever the user's
// facts are now, or anyone else's with ECODEUSED.
func (s *Service) eligible(ctx context.Context, code string, user int64, now time.Time) error {
	if s.Rules == nil {
		return nil
	}
	rc, err := s.Codes.Code(ctx, code)
	if err != nil {
		if quan.ErrorCode(err) == quan.ENOTFOUND {
			return quan.Errorf(quan.ENOTFOUND, "no code %s", code)
		}
		return err
	}
	if rc.UserID != 0 {
		return nil
	}
	tr, err := s.Rules.Rules(ctx, rc.TemplateID)
	if err != nil {
		return fmt.Errorf("rules of template %d: %w", rc.TemplateID, err)
	}
	return quan.EligibleBy(ctx, tr, s.Facts, rc.TemplateID, user, now)
}
