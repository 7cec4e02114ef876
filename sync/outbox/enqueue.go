package outbox

import (
	"context"
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
	if err := validKey(localType, localID); err != nil {
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
		return models.EnsureLinks(tx, localType, localID, e.linkSpecs(localType, localID), now)
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

func (e *Engine) linkSpecs(localType, localID string) []models.LinkSpec {
	var specs []models.LinkSpec
	for _, name := range e.routes[localType] {
		obj := e.services[name].Config.Objects[localType]
		key := strings.NewReplacer("{local_id}", localID, "{local_type}", localType).Replace(obj.ExternalKey)
		specs = append(specs, models.LinkSpec{Service: name, ExternalKey: key,
			IdempotencyKey: localType + "-" + localID + "-create"})
	}
	return specs
}

// Routed reports whether a local type goes to any service.
func (e *Engine) Routed(localType string) bool { return len(e.routes[localType]) > 0 }

// validKey accepts the type and id of a record. They end up in paths, in
// external keys and in Idempotency-Key headers, so neither may hold a
// slash, a space or a control character.
func validKey(localType, localID string) error {
	if !plainKey(localType, 64) {
		return models.Invalid("the type must be 1 to 64 characters without spaces, slashes or control characters")
	}
	if !plainKey(localID, 128) {
		return models.Invalid("the id must be 1 to 128 characters without spaces, slashes or control characters")
	}
	return nil
}

func plainKey(s string, max int) bool {
	if s == "" || len(s) > max || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r == '/' || unicode.IsSpace(r) || unicode.IsControl(r) {
			return false
		}
	}
	return true
}
