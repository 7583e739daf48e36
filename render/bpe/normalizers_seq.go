package bpe

import "encoding/json"

// Normalizers: NFC (with the crate's Unicode 9 behaviour, normalize.go) and Sequence, whose steps
// run in order. A Sequence of NFC steps is NFC (NFC is idempotent); an empty Sequence, as DeepSeek
// ships, changes nothing. Every other normalizer is refused.

// normalizerJSON is one normalizer object; only the fields of the supported types are declared, so a
// strict decode rejects any other.
type normalizerJSON struct {
	Type        string            `json:"type"`
	Normalizers []json.RawMessage `json:"normalizers"`
}

func (l *loader) parseNormalizer(raw string) error {
	if raw == "null" {
		return nil
	}
	var c normalizerJSON
	if err := decodeStrict(raw, &c, "normalizer"); err != nil {
		return err
	}
	switch c.Type {
	case "NFC":
		l.normalizeNFC = true
		return nil
	case "Sequence":
		for _, step := range c.Normalizers {
			if err := l.parseNormalizer(string(step)); err != nil {
				return err
			}
		}
		return nil
	}
	return unsupported("normalizer %q", c.Type)
}
