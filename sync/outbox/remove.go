package outbox

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/connector"
)

// remove pushes a deleted record's desired state: no object at the
// provider. The object the link knows is deleted (or archived). With no
// id, a lost create may have made one: while the provider replays the
// create's idempotency key, the create is sent again with it, and answers
// with that object (or makes it now) — a search may not show an object
// made a moment ago; past that, it is looked up by key. With neither, the
// object was never created and there is nothing to call.
func (s *sender) remove(ctx context.Context) {
	l, conn := s.j.link, s.svc.Conn
	id := l.ExternalID
	switch {
	case id == "" && l.NeedsLookup && s.keyReplays():
		call := s.call(ctx, func(ctx context.Context) connector.Call {
			return conn.Create(ctx, s.record(s.createBody()), l.IdempotencyKey)
		})
		if call.Class != connector.OK { // an OK create always names its object
			s.settle(call, "")
			return
		}
		id = call.ExternalID
	case id == "" && l.NeedsLookup && conn.CanLookup(l.LocalType):
		var ok bool
		if _, id, ok = s.lookUp(ctx); !ok {
			return
		}
	}
	switch {
	case id == "" && l.NeedsLookup && !conn.CanLookup(l.LocalType):
		s.out.Status, s.out.NextAttempt = models.StatusFailed, s.e.clock.Now()
		s.out.LastError = fmt.Sprintf("a create may have reached %s, which cannot look %s up by key: whether an object stays there is unknown",
			s.svc.Name, l.ExternalKey)
		return
	case id == "":
		s.gone() // never created
		return
	}
	if !conn.CanDelete(l.LocalType) {
		s.out.Status, s.out.NextAttempt = models.StatusFailed, s.e.clock.Now()
		s.out.LastError = fmt.Sprintf("%s has no delete operation for %s: the object stays at the provider", s.svc.Name, l.LocalType)
		return
	}
	rec := s.record(s.j.payload)
	rec.ExternalID = id
	call := s.call(ctx, func(ctx context.Context) connector.Call { return conn.Delete(ctx, rec) })
	s.settle(call, models.DeletedHash)
	if call.Ambiguous {
		s.out.DeleteUnknown = true // see recreate
	}
	if s.out.Status == models.StatusSuccess {
		s.gone()
		if id != l.ExternalID {
			s.out.DeletedObject = id
		}
	}
}

// recreate sends a live record whose object the update did not find, after
// a delete of ours whose outcome is unknown (its answer lost, or its worker
// stopped mid-send), before the record was written again. The object is
// looked up by key and updated if it is there after all; if not, it is
// created anew, with the next idempotency key, since the old one may
// replay the create of the object that is gone.
func (s *sender) recreate(ctx context.Context) {
	l, conn := s.j.link, s.svc.Conn
	_, id, ok := s.lookUp(ctx)
	if !ok {
		return
	}
	rec := s.record(s.j.payload)
	if id != "" {
		rec.ExternalID = id
		s.settle(s.call(ctx, func(ctx context.Context) connector.Call { return conn.Update(ctx, rec) }), s.j.hash)
		return
	}
	// The object the link names is gone: unless the create succeeds, the
	// link forgets it, and a create whose answer is lost is then looked
	// for by key, as any lost create is.
	rec.ExternalID, s.out.NextKey, s.out.ObjectGone = "", nextKey(l.IdempotencyKey), true
	// Frozen for this create's later attempts: should its answer be lost,
	// the object a lookup finds holds this body, whatever the record
	// becomes meanwhile.
	s.out.CreateBody = s.j.payload
	s.settle(s.call(ctx, func(ctx context.Context) connector.Call { return conn.Create(ctx, rec, s.out.NextKey) }), s.j.hash)
}

// gone finishes the link as deleted: the provider holds no object of it.
func (s *sender) gone() {
	s.out.Status, s.out.ExternalID, s.out.PushedHash = models.StatusDeleted, "", models.DeletedHash
	s.out.NeedsLookup, s.out.DeleteUnknown, s.out.LastError, s.out.NextAttempt = false, false, "", s.e.clock.Now()
	s.out.NextKey = nextKey(s.j.link.IdempotencyKey)
}

// nextKey is the idempotency key of the create after a delete: the key
// with its generation (-g2, -g3, …) counted up. The provider must not
// answer a new create of the record with the deleted object's, which a
// replay of the old key would.
func nextKey(key string) string {
	base, gen := key, 1
	if i := strings.LastIndex(key, "-g"); i >= 0 {
		if n, err := strconv.Atoi(key[i+2:]); err == nil && n > 0 {
			base, gen = key[:i], n
		}
	}
	return base + "-g" + strconv.Itoa(gen+1)
}
