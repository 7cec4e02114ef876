package redact

import (
	"encoding/json"
	"strings"
)

// A record's own secrets — the password or card number under a sensitive
// key of its payload — are masked by key in a JSON body, but a provider
// may echo them in prose ("password pw-123 is too weak", in text/plain).
// ForPayload makes a Redactor that masks those values verbatim too.

// Bounds on what ForPayload takes of a payload. A longer value cannot fit
// in an excerpt anyway (excerpts redact at most 8 KiB of a body), and the
// total keeps a large payload from building a large matcher on every send.
const (
	maxRecordValue  = 8 << 10
	maxRecordValues = 64 << 10
)

// ForPayload returns a Redactor that also masks, wherever text is redacted,
// the values of the payloads' sensitive fields: every string and number
// under a key Sensitive matches, at any depth, and the "value" of a custom
// field whose "name" is sensitive (as JSON masks them). It shares r's
// fields and secrets. Payloads that are not JSON, or hold no such value,
// give r.
func (r *Redactor) ForPayload(payloads ...[]byte) *Redactor {
	var values []string
	for _, p := range payloads {
		values = append(values, r.payloadSecrets(p)...)
	}
	if len(values) == 0 {
		return r
	}
	return &Redactor{keys: r.keys, secrets: r.secrets, record: newMatcher(patternsOf(values))}
}

// payloadSecrets lists the values of payload's sensitive fields.
func (r *Redactor) payloadSecrets(payload []byte) []string {
	if !json.Valid(payload) {
		return nil
	}
	c := &collector{walker: walker{r: r, doc: payload, openFrom: -1}}
	if c.value(false) != nil {
		return nil
	}
	return c.values
}

// collector walks a valid JSON document as walker does, gathering the
// values under sensitive keys instead of masking them.
type collector struct {
	walker
	values []string
	size   int
}

func (c *collector) keep(v string) {
	if len(v) >= minKnown && len(v) <= maxRecordValue && c.size+len(v) <= maxRecordValues {
		c.values = append(c.values, v)
		c.size += len(v)
	}
}

// value reads one value; sensitive says it lies under a sensitive key.
func (c *collector) value(sensitive bool) error {
	switch b := c.peek(); {
	case b == '{':
		return c.object(sensitive)
	case b == '[':
		return c.array(sensitive)
	case b == '"':
		s, err := c.str()
		if err != nil {
			return err
		}
		c.inString(s, sensitive)
		return nil
	case b == 0:
		return errWalk
	default:
		if lit := string(c.literal()); sensitive && lit != "true" && lit != "false" && lit != "null" {
			c.keep(lit)
		}
		return nil
	}
}

// inString takes a string value, and the values inside one that holds a
// JSON document, as JSON redacts such strings as documents.
func (c *collector) inString(s string, sensitive bool) {
	if sensitive {
		c.keep(s)
	}
	if t := strings.TrimSpace(s); (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && json.Valid([]byte(s)) {
		inner := &collector{walker: walker{r: c.r, doc: []byte(s), openFrom: -1}, size: c.size}
		if inner.value(sensitive) == nil {
			c.values, c.size = append(c.values, inner.values...), inner.size
		}
	}
}

func (c *collector) array(sensitive bool) error {
	c.i++ // the opening bracket
	for n := 0; c.peek() != ']'; n++ {
		if n > 0 {
			if err := c.expect(','); err != nil {
				return err
			}
		}
		if err := c.value(sensitive); err != nil {
			return err
		}
	}
	c.i++ // the closing bracket
	return nil
}

// object reads an object. Its "value" and "values" members are read last,
// once the object's name members have said whether they are sensitive.
func (c *collector) object(sensitive bool) error {
	c.i++ // the opening brace
	named := false
	type member struct {
		key string
		at  int // where its value starts
	}
	var later []member
	for n := 0; c.peek() != '}'; n++ {
		if n > 0 {
			if err := c.expect(','); err != nil {
				return err
			}
			c.skipSpace()
		}
		key, err := c.str()
		if err != nil {
			return err
		}
		if err := c.expect(':'); err != nil {
			return err
		}
		switch k := strings.ToLower(key); {
		case valueKeys[k]:
			later = append(later, member{key, c.i})
			err = c.skip()
		case nameKeys[k] && c.peek() == '"':
			var name string
			name, err = c.str()
			named = named || c.r.Sensitive(name)
			c.inString(name, sensitive)
		default:
			err = c.value(sensitive || c.r.Sensitive(key))
		}
		if err != nil {
			return err
		}
	}
	end := c.i + 1 // past the closing brace
	for _, m := range later {
		c.i = m.at
		if err := c.value(sensitive || named || c.r.Sensitive(m.key)); err != nil {
			return err
		}
	}
	c.i = end
	return nil
}
