package quan

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math/bits"
)

// CodeKeySize is the length of a code key's secret: an AES-128 key.
const CodeKeySize = 16

// codeRounds is the number of Feistel rounds of a code key's permutation.
// Four rounds of a pseudo-random function already make a strong
// pseudo-random permutation (Luby–Rackoff); eight leave a wide margin.
const codeRounds = 8

// CodeKey makes a coupon's code out of its id and reads the id back out
// of a code, so that a code needs no column and no index: the code of
// coupon id is its template's prefix, then id put through a secret
// permutation of the 64-bit numbers and written in 15 symbols of
// CodeAlphabet (big-endian base 30, "2" for a zero digit), then the check
// symbol of NewCode. Codes look random and cannot be made from ids
// without the secret; distinct ids have distinct codes.
//
// The permutation is a balanced Feistel network of codeRounds rounds over
// the two 32-bit halves of the id, whose round function is AES-128 under
// the secret of a block holding the round number and the half.
//
// Whoever holds the secret can make the code of any coupon: it is kept
// with the coupons, in the store, and a store reads it when it opens. A
// lost or changed secret changes every code.
type CodeKey struct {
	block cipher.Block
}

// NewCodeKey returns the key of secret, which must be CodeKeySize bytes.
func NewCodeKey(secret []byte) (*CodeKey, error) {
	if len(secret) != CodeKeySize {
		return nil, fmt.Errorf("code key: the secret is %d bytes, want %d", len(secret), CodeKeySize)
	}
	b, err := aes.NewCipher(secret)
	if err != nil {
		return nil, fmt.Errorf("code key: %w", err)
	}
	return &CodeKey{block: b}, nil
}

// NewCodeSecret returns a fresh secret for NewCodeKey, from crypto/rand.
func NewCodeSecret() []byte {
	secret := make([]byte, CodeKeySize)
	rand.Read(secret) // never fails (crypto/rand's contract since Go 1.24)
	return secret
}

// Code returns the code of coupon id among those of a template with
// prefix, 16 to 18 symbols. prefix must be 0 to MaxCodePrefix symbols of
// CodeAlphabet, as Template.Validate has it.
func (k *CodeKey) Code(id int64, prefix string) string {
	b := make([]byte, len(prefix)+CodeLength)
	copy(b, prefix)
	v := k.permute(uint64(id))
	for i := len(b) - 2; i >= len(prefix); i-- {
		b[i] = CodeAlphabet[v%uint64(len(CodeAlphabet))]
		v /= uint64(len(CodeAlphabet))
	}
	b[len(b)-1] = CodeAlphabet[checkSymbol(b[:len(b)-1])]
	return string(b)
}

// CouponID returns the id of the coupon whose code is code, among the
// coupons of a template with prefix. code is read as a person may have
// typed it (see ParseCode): ErrInvalid if it is no code at all or a
// symbol is mistyped, which the check symbol catches. A well-formed code
// that no id has with prefix, because it does not start with prefix or
// its value does not fit 64 bits or gives an id below 1, is ErrNotFound.
//
// Every other well-formed code gives an id: the id of a code someone made
// up is a random 64-bit number, almost surely no coupon's. The caller
// looks the id up, and checks that the coupon's template has prefix.
func (k *CodeKey) CouponID(code, prefix string) (int64, error) {
	c, err := ParseCode(code)
	if err != nil {
		return 0, err
	}
	if len(c) != len(prefix)+CodeLength || c[:len(prefix)] != prefix {
		return 0, Errorf(ENOTFOUND, "no coupon has code %s", c)
	}
	var v uint64
	for i := len(prefix); i < len(c)-1; i++ {
		hi, lo := bits.Mul64(v, uint64(len(CodeAlphabet)))
		lo, carry := bits.Add64(lo, uint64(codeIndex[c[i]]), 0)
		if hi != 0 || carry != 0 {
			return 0, Errorf(ENOTFOUND, "no coupon has code %s", c)
		}
		v = lo
	}
	id := int64(k.unpermute(v))
	if id < 1 {
		return 0, Errorf(ENOTFOUND, "no coupon has code %s", c)
	}
	return id, nil
}

// permute is the Feistel network: each round swaps the halves, adding
// (by XOR) the round function of one to the other.
func (k *CodeKey) permute(v uint64) uint64 {
	var buf [2 * aes.BlockSize]byte
	l, r := uint32(v>>32), uint32(v)
	for round := range codeRounds {
		l, r = r, l^k.f(&buf, round, r)
	}
	return uint64(l)<<32 | uint64(r)
}

// unpermute undoes permute, running its rounds backwards.
func (k *CodeKey) unpermute(v uint64) uint64 {
	var buf [2 * aes.BlockSize]byte
	l, r := uint32(v>>32), uint32(v)
	for round := codeRounds - 1; round >= 0; round-- {
		l, r = r^k.f(&buf, round, l), l
	}
	return uint64(l)<<32 | uint64(r)
}

// f is the round function: the first 32 bits of AES of the block
// (round, half, zeros). buf, the block and the cipher's output, is the
// caller's, so that a code costs one allocation of it, not one a round.
func (k *CodeKey) f(buf *[2 * aes.BlockSize]byte, round int, half uint32) uint32 {
	in, out := buf[:aes.BlockSize], buf[aes.BlockSize:]
	clear(in)
	in[0] = byte(round)
	binary.BigEndian.PutUint32(in[1:], half)
	k.block.Encrypt(out, in)
	return binary.BigEndian.Uint32(out)
}
