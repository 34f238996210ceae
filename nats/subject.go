package nats

import (
	"strings"

	"github.com/quanhq/quan"
)

// checkSubject refuses a subject to publish on: it must be literal (no
// wildcards) and belong to one of patterns.
func checkSubject(patterns []string, subject string) error {
	if !validSubject(subject) || strings.ContainsAny(subject, "*>") {
		return quan.Errorf(quan.EINVALID, "bad subject %q", subject)
	}
	for _, p := range patterns {
		if subsetOf(subject, p) {
			return nil
		}
	}
	return quan.Errorf(quan.EINVALID, "subject %q is on none of the bus's streams %q", subject, patterns)
}

// validSubject reports whether s is a well-formed NATS subject: dot
// separated tokens, none empty or holding white space, '>' only last.
func validSubject(s string) bool {
	if s == "" {
		return false
	}
	toks := strings.Split(s, ".")
	for i, t := range toks {
		if t == "" || strings.ContainsAny(t, " \t\r\n") {
			return false
		}
		if strings.ContainsAny(t, "*>") && len(t) > 1 {
			return false
		}
		if t == ">" && i != len(toks)-1 {
			return false
		}
	}
	return true
}

// subsetOf reports whether every subject filter matches is also matched
// by pattern, both well-formed and possibly with wildcards.
func subsetOf(filter, pattern string) bool {
	f, p := strings.Split(filter, "."), strings.Split(pattern, ".")
	for i, pt := range p {
		if pt == ">" {
			return len(f) > i
		}
		if i >= len(f) {
			return false
		}
		switch {
		case f[i] == ">":
			return false
		case pt == "*":
		case f[i] != pt:
			return false
		}
	}
	return len(f) == len(p)
}

// validName reports whether s may name a stream or a durable consumer.
func validName(s string) bool {
	return s != "" && len(s) <= 200 && !strings.ContainsAny(s, ". \t\r\n*>/\\")
}
