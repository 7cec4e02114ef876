package outbox

import (
	"context"
	"strings"

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

func validKey(localType, localID string) error {
	if localType == "" || len(localType) > 64 || strings.ContainsAny(localType, "/ \t\n") {
		return models.Invalid("the type must be 1 to 64 characters without spaces or slashes")
	}
	if localID == "" || len(localID) > 128 || strings.ContainsAny(localID, "/ \t\n") {
		return models.Invalid("the id must be 1 to 128 characters without spaces or slashes")
	}
	return nil
}
