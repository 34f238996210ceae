// Package templates manages coupon templates (券模板) through their life:
// create, edit a draft, activate, pause, resume, end, add stock, change
// their eligibility and applies rules with versions, and evaluate those
// rules on samples. Its RuleBook keeps the compiled rules of templates for
// the hot paths that decide them (claims, codes, distributions, quotes).
package templates
