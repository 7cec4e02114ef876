package outbox

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
)

// Enqueued says what an upsert did.
type Enqueued struct {
	Changed bool          // false: the same payload was already stored; nothing queued
	Links   []models.Link // the record's links after the upsert
}

// Upsert stores a record's payload and, when it changed, queues a push to
// every service its type is routed to — in one transaction, so a record is
// never stored without its links. The same payload again changes nothing.
func (e *Engine) Upsert(ctx context.Context, localType, localID string, payload []byte) (Enqueued, error) {
	if err := CheckKey(localType, localID); err != nil {
		return Enqueued{}, err
	}
	canonical, hash, err := models.CanonicalPayload(payload)
	if err != nil {
		return Enqueued{}, err
	}
	now := e.clock.Now()
	var out Enqueued
	err = e.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if out.Changed, err = models.UpsertRecord(tx, localType, localID, canonical, hash, now); err != nil || !out.Changed {
			return err
		}
		return models.EnsureLinks(tx, localType, localID, e.linkSpecs(localType, localID, traceParent(ctx)), now)
	})
	if err != nil {
		return out, err
	}
	if out.Changed {
		e.poke()
	}
	out.Links, err = models.RecordLinks(e.db.WithContext(ctx), localType, localID)
	return out, err
}

func (e *Engine) linkSpecs(localType, localID, trace string) []models.LinkSpec {
	var specs []models.LinkSpec
	for _, name := range e.routes[localType] {
		obj := e.services[name].Config.Objects[localType]
		key := strings.NewReplacer("{local_id}", localID, "{local_type}", localType).Replace(obj.ExternalKey)
		specs = append(specs, models.LinkSpec{Service: name, ExternalKey: key,
			IdempotencyKey: localType + "-" + localID + "-create", TraceParent: trace})
	}
	return specs
}

// Routed reports whether a local type goes to any service.
func (e *Engine) Routed(localType string) bool { return len(e.routes[localType]) > 0 }

// CheckKey says why a record's type or id cannot be taken, or returns nil.
// They end up in paths, in external keys and in Idempotency-Key headers, so
// neither may hold a slash, a space or a control character; and they are
// shown on pages, so neither may hold an invisible formatting character
// (Unicode category Cf): U+202E and the other bidi controls reorder the
// text around them, so that the id "12\u202e34" reads as "1243",
// and zero-width ones make two ids that look the same.
func CheckKey(localType, localID string) error {
	if err := checkKeyPart("type", localType, 64); err != nil {
		return err
	}
	return checkKeyPart("id", localID, 128)
}

func checkKeyPart(field, s string, max int) error {
	plain := s != "" && len(s) <= max && utf8.ValidString(s)
	for _, r := range s {
		if unicode.Is(unicode.Cf, r) {
			return models.Invalid(fmt.Sprintf("the %s holds %U, an invisible formatting character that changes how text reads on a page; "+
				"record types and ids may not hold one", field, r))
		}
		plain = plain && r != '/' && !unicode.IsSpace(r) && !unicode.IsControl(r)
	}
	if !plain {
		return models.Invalid(fmt.Sprintf("the %s must be 1 to %d characters without spaces, slashes or control characters", field, max))
	}
	return nil
}
