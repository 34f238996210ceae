package quan

import "strings"

// One SMS segment holds 160 characters of the GSM 7-bit alphabet, or 70
// UTF-16 code units once any character falls outside it (UCS-2); a longer
// text is split and billed per segment, and arrives as several messages on
// older phones. quan keeps every SMS to one segment.
const (
	SMSGSMLimit  = 160
	SMSUCS2Limit = 70
)

// gsmBasic is the GSM 03.38 basic character set; each costs one septet.
const gsmBasic = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?" +
	"¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"

// gsmExt is the GSM 03.38 extension table; each costs two septets (escape
// and character).
const gsmExt = "^{}\\[~]|€\f"

// SMSLength returns how much of a segment s uses and the segment's size:
// septets of 160 if every character is GSM 7-bit, else UTF-16 code units
// of 70 (a character beyond the BMP, such as an emoji, counts 2).
func SMSLength(s string) (used, limit int) {
	gsm := 0
	for _, r := range s {
		switch {
		case strings.ContainsRune(gsmBasic, r):
			gsm++
		case strings.ContainsRune(gsmExt, r):
			gsm += 2
		default:
			return ucs2Len(s), SMSUCS2Limit
		}
	}
	return gsm, SMSGSMLimit
}

func ucs2Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r > 0xFFFF {
			n++
		}
	}
	return n
}

// FitsOneSMS reports whether s fits one SMS segment.
func FitsOneSMS(s string) bool {
	used, limit := SMSLength(s)
	return used <= limit
}
