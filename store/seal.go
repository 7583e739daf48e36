package store

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// SealKey is one server secret for sealing. Keys rotate by id: a Sealer signs
// with its first key and verifies with all of them, so a new key is deployed
// first in second position (verify only), then promoted to first, and the old
// one removed after the longest TTL of what it signed.
type SealKey struct {
	// ID names the key inside every sealed value (1–32 bytes). It is public.
	ID string
	// Secret is the key material, at least 16 bytes (32 random bytes
	// recommended). Never logged: SealKey implements slog.LogValuer.
	Secret []byte
}

// LogValue redacts the secret.
func (k SealKey) LogValue() slog.Value {
	return slog.GroupValue(slog.String("id", k.ID), slog.String("secret", "REDACTED"))
}

// SealerOptions configures a Sealer. The zero value is ready to use.
type SealerOptions struct {
	// Now returns the current time for expiry checks. Nil means time.Now;
	// tests inject a fixed clock.
	Now func() time.Time
}

// Sealer seals values with HMAC-SHA256 bound to a tenant, a purpose and an
// expiry, and opens them again. It is safe for concurrent use.
//
// Sealed layout (all integers big-endian):
//
//	magic "STCH" | version 1 | flags (bit 0: payload encrypted) |
//	key id length (1 byte) | key id | expiry unix seconds (int64, 0 = never) |
//	payload | HMAC-SHA256 (32 bytes)
//
// The MAC covers a domain string, the length-prefixed tenant and purpose (not
// stored: the opener supplies them, so a value sealed for tenant A or purpose
// "artifact" does not open for tenant B or purpose "reseed") and every byte
// before it. An encrypted payload is nonce (12) | AES-256-GCM ciphertext,
// encrypted before the MAC is computed.
type Sealer struct {
	keys []sealKey // keys[0] signs
	now  func() time.Time
}

type sealKey struct {
	id     string
	macKey []byte
	aead   cipher.AEAD
}

const (
	sealMagic     = "STCH"
	sealVersion   = 1
	sealFlagPriv  = 1
	macSize       = sha256.Size
	maxKeyIDLen   = 32
	minSecretLen  = 16
	sealDomain    = "stitch/seal/v1"
	gcmNonceSize  = 12
	sealHeaderMin = len(sealMagic) + 1 + 1 + 1 + 1 + 8
)

// NewSealer returns a Sealer that signs with keys[0] and verifies with any of
// keys. It fails if keys is empty, an id is empty, too long or repeated, or a
// secret is shorter than 16 bytes. The secrets are copied (derived).
func NewSealer(keys []SealKey, opts SealerOptions) (*Sealer, error) {
	if len(keys) == 0 {
		return nil, errors.New("new sealer: no keys")
	}
	s := &Sealer{now: opts.Now}
	if s.now == nil {
		s.now = time.Now
	}
	seen := make(map[string]bool, len(keys))
	var errs []error
	for i, k := range keys {
		switch {
		case k.ID == "" || len(k.ID) > maxKeyIDLen:
			errs = append(errs, fmt.Errorf("key %d: id must be 1-%d bytes", i, maxKeyIDLen))
			continue
		case seen[k.ID]:
			errs = append(errs, fmt.Errorf("key %d: duplicate id %q", i, k.ID))
			continue
		case len(k.Secret) < minSecretLen:
			errs = append(errs, fmt.Errorf("key %q: secret shorter than %d bytes", k.ID, minSecretLen))
			continue
		}
		seen[k.ID] = true
		block, err := aes.NewCipher(derive(k.Secret, "enc"))
		if err != nil {
			return nil, fmt.Errorf("new sealer: key %q: %w", k.ID, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("new sealer: key %q: %w", k.ID, err)
		}
		s.keys = append(s.keys, sealKey{id: k.ID, macKey: derive(k.Secret, "mac"), aead: aead})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("new sealer: %w", err)
	}
	return s, nil
}

// derive separates the MAC and encryption keys taken from one secret.
func derive(secret []byte, label string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(sealDomain + " key " + label))
	return m.Sum(nil)
}

// Seal returns payload sealed for tenant and purpose until expiresAt (zero
// means never; sub-second precision is dropped). The payload is readable by
// whoever holds the value, only its integrity is protected; use SealPrivate
// for values handed to clients. Seal does not retain payload.
func (s *Sealer) Seal(tenant, purpose string, payload []byte, expiresAt time.Time) ([]byte, error) {
	return s.seal(tenant, purpose, payload, expiresAt, false)
}

// SealPrivate is Seal with the payload also encrypted (AES-256-GCM), for
// values that leave the server, such as reasoning.encrypted_content.
func (s *Sealer) SealPrivate(tenant, purpose string, payload []byte, expiresAt time.Time) ([]byte, error) {
	return s.seal(tenant, purpose, payload, expiresAt, true)
}

func (s *Sealer) seal(tenant, purpose string, payload []byte, expiresAt time.Time, private bool) ([]byte, error) {
	return s.sealAppend(tenant, purpose, expiresAt, private, len(payload), func(dst []byte) []byte {
		return append(dst, payload...)
	})
}

// sealAppend builds a sealed value whose plaintext payload is written by
// appendPayload (sizeHint bytes expected), avoiding a copy for artifacts.
func (s *Sealer) sealAppend(tenant, purpose string, expiresAt time.Time, private bool, sizeHint int, appendPayload func([]byte) []byte) ([]byte, error) {
	k := &s.keys[0]
	var exp int64
	if !expiresAt.IsZero() {
		exp = expiresAt.Unix()
		if exp <= 0 {
			return nil, fmt.Errorf("seal %s: expiry %v before 1970", purpose, expiresAt)
		}
	}
	var flags byte
	if private {
		flags |= sealFlagPriv
	}
	out := make([]byte, 0, sealHeaderMin+len(k.id)+gcmNonceSize+sizeHint+16+macSize)
	out = append(out, sealMagic...)
	out = append(out, sealVersion, flags, byte(len(k.id)))
	out = append(out, k.id...)
	out = binary.BigEndian.AppendUint64(out, uint64(exp))
	if private {
		plain := appendPayload(nil)
		var nonce [gcmNonceSize]byte
		if _, err := rand.Read(nonce[:]); err != nil {
			return nil, fmt.Errorf("seal %s: nonce: %w", purpose, err)
		}
		out = append(out, nonce[:]...)
		out = k.aead.Seal(out, nonce[:], plain, nil)
	} else {
		out = appendPayload(out)
	}
	return appendMAC(out, k.macKey, tenant, purpose), nil
}

func appendMAC(out, macKey []byte, tenant, purpose string) []byte {
	m := hmac.New(sha256.New, macKey)
	m.Write(macPreamble(tenant, purpose))
	m.Write(out)
	return m.Sum(out)
}

func macPreamble(tenant, purpose string) []byte {
	b := make([]byte, 0, len(sealDomain)+len(tenant)+len(purpose)+2*binary.MaxVarintLen64)
	b = append(b, sealDomain...)
	b = binary.AppendUvarint(b, uint64(len(tenant)))
	b = append(b, tenant...)
	b = binary.AppendUvarint(b, uint64(len(purpose)))
	return append(b, purpose...)
}

// Open verifies a value sealed for tenant and purpose and returns its payload
// (a fresh slice the caller owns) and expiry (zero if it never expires).
// It returns an error wrapping ErrInvalid for anything malformed, signed by an
// unknown key or bound elsewhere, and ErrExpired for an authentic value past
// its expiry. It never panics, whatever the input.
func (s *Sealer) Open(tenant, purpose string, sealed []byte) ([]byte, time.Time, error) {
	payload, exp, err := s.open(tenant, purpose, sealed)
	if err != nil {
		return nil, time.Time{}, err
	}
	return append([]byte(nil), payload...), exp, nil
}

// open is Open without the final copy: an unencrypted payload aliases sealed.
func (s *Sealer) open(tenant, purpose string, sealed []byte) ([]byte, time.Time, error) {
	return s.openChecked(tenant, purpose, sealed, true)
}

// openChecked is open, with the MAC left unchecked when checkMAC is false: only for bytes this
// process sealed, or verified before keeping them, where no other process can write (see
// Tiered.links). Everything else (header, key id, expiry) is checked the same.
func (s *Sealer) openChecked(tenant, purpose string, sealed []byte, checkMAC bool) ([]byte, time.Time, error) {
	if len(sealed) < sealHeaderMin+macSize || string(sealed[:len(sealMagic)]) != sealMagic {
		return nil, time.Time{}, fmt.Errorf("open %s: bad header: %w", purpose, ErrInvalid)
	}
	p := len(sealMagic)
	version, flags, idLen := sealed[p], sealed[p+1], int(sealed[p+2])
	p += 3
	if version != sealVersion || flags&^sealFlagPriv != 0 || idLen == 0 || idLen > maxKeyIDLen ||
		len(sealed) < p+idLen+8+macSize {
		return nil, time.Time{}, fmt.Errorf("open %s: bad header: %w", purpose, ErrInvalid)
	}
	id := string(sealed[p : p+idLen])
	p += idLen
	exp := int64(binary.BigEndian.Uint64(sealed[p:]))
	p += 8
	var k *sealKey
	for i := range s.keys {
		if s.keys[i].id == id {
			k = &s.keys[i]
			break
		}
	}
	if k == nil {
		return nil, time.Time{}, fmt.Errorf("open %s: unknown key id %q: %w", purpose, truncate(id), ErrInvalid)
	}
	body := sealed[:len(sealed)-macSize]
	if checkMAC {
		m := hmac.New(sha256.New, k.macKey)
		m.Write(macPreamble(tenant, purpose))
		m.Write(body)
		if !hmac.Equal(m.Sum(nil), sealed[len(body):]) {
			return nil, time.Time{}, fmt.Errorf("open %s: MAC mismatch (tampered, or another tenant's): %w", purpose, ErrInvalid)
		}
	}
	var expiresAt time.Time
	if exp != 0 {
		if exp < 0 {
			return nil, time.Time{}, fmt.Errorf("open %s: negative expiry: %w", purpose, ErrInvalid)
		}
		expiresAt = time.Unix(exp, 0).UTC()
		if !s.now().Before(expiresAt) {
			return nil, time.Time{}, fmt.Errorf("open %s: expired at %s: %w", purpose, expiresAt.UTC().Format(time.RFC3339), ErrExpired)
		}
	}
	payload := body[p:]
	if flags&sealFlagPriv != 0 {
		if len(payload) < gcmNonceSize {
			return nil, time.Time{}, fmt.Errorf("open %s: short ciphertext: %w", purpose, ErrInvalid)
		}
		plain, err := k.aead.Open(nil, payload[:gcmNonceSize], payload[gcmNonceSize:], nil)
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("open %s: decrypt: %w", purpose, ErrInvalid)
		}
		payload = plain
	}
	return payload, expiresAt, nil
}
