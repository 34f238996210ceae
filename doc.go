// Package quan is the vocabulary of quan (券), a coupon platform: its
// entities and their rules, the ports its use cases run on, its errors,
// and the pure functions several packages share (planning a chunk,
// pricing an order, stacking coupons, the wire formats of the bus, the
// texts of messages). Nothing here runs: the use cases live in packages
// of their own, the technologies in adapters, and cmd/quan wires them.
//
// # Glossary
//
//	模板 template     Template: what a coupon is worth, to whom, when,
//	                  how many (stock, 库存) and how many per user (限领)
//	满减 / 折扣 / 立减 / 每满减
//	                  the kinds of Rule: threshold, discount, direct, step
//	叠加 stacking     which coupons go together on one order (Stacking)
//	券 coupon         Coupon: one user's copy of a template, with its
//	                  window and status (available, locked, used, ...)
//	领券 claim        Claim: a user takes a coupon in a flash sale
//	发券任务 task     Task: a bulk distribution to the users of a file or
//	                  a segment (人群), applied in Chunks
//	券码 code         a one-time redemption code (CodeBatch, RedeemCode)
//	口令券 promo code a template's shared public code many users type to
//	                  claim it (TemplateSpec.PromoCode, promo.go)
//	核销 redeem       settle a coupon with an order: quote, lock, redeem,
//	                  release, refund (Quote, CouponStatus)
//	预算 budget       the discount a template may give in all (Budget)
//	资格 eligibility  who may receive a template's coupons (RuleEngine)
//	预约 reminder     a user asks to be told when a template opens
//
// # Package map
//
// Arrows point from a package to what it imports. Each use case imports
// only this package and internal/: one that needs another's work declares
// a small interface, and cmd/quan/internal/app wires the other to it (the
// claims ask the shops' caps through claims.ShopCaps, for one). The test
// TestLayout holds the code to this map.
//
//	quan                      this package: vocabulary, ports, pure rules
//	internal/                 helpers without business meaning: batch,
//	                          diskfree, flight, sqlrow, userfile, userset
//
//	use cases → quan, internal/
//	  accounts                the console's accounts and sign-in
//	  apikeys                 service keys: made, listed, revoked, checked
//	  claims                  flash-sale claims: reserve, hand off, persist, reap
//	  codes                   redemption code batches and their redemption
//	  events                  the outbox's relay to the bus
//	  facts                   users' facts, which rules decide on
//	  notify                  dispatch, inbox and popups, contacts, reminders
//	  reconcile               the cache held to the store
//	  shops                   shops' settings (the daily claim cap)
//	  stats                   statistics, and the refusals counted for them
//	  tasks                   bulk distributions: the service and the Runner
//	  templates               templates' life and rules (RuleBook)
//	  wallet                  users' coupons, their settlement, and the
//	                          shop's search and revocation of them
//
//	adapters → quan, internal/ (never a use case, never each other)
//	  sqlite, mysql           the store
//	  inmem, redis            the cache (and limiter, idempotency)
//	  nats                    the bus, embedded or a cluster
//	  disk                    uploaded files
//	  sheet, report           reading .xlsx/.csv, writing failure reports
//	  rules                   the CEL rule engine
//	  mail, sms               the senders
//	  prom, tracing           metrics and traces around the ports
//
//	fronts → quan, use cases
//	  http, http/console      the JSON API and the operator console
//
//	kits (tests only)
//	  quantest                the conformance suites every adapter runs
//	  internal/testrig        what the use cases' tests share; its fault,
//	                          backends a test takes down and brings back
//	  internal/integration    the tests' services (QUAN_TEST_*): skip
//	                          without, and say so (imported by adapters'
//	                          tests too, so classed with internal/)
//
//	cmd/quan                  the one binary; internal/app wires
//	                          everything, internal/bench measures it
package quan
