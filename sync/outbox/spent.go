package outbox

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/syncdesk/syncdesk/models"
)

// searchLag bounds how long a lookup that is a search (lookup_consistency:
// eventual) takes to show an object just made: Stripe's "Under normal
// operating conditions, data is searchable in under 1 minute"
// (https://docs.stripe.com/search#data-freshness).
const searchLag = time.Minute

// spentKey reports whether the link's idempotency key is spent, and when it
// was: the last create sent under that key was answered with a server
// error (5xx), whatever searches failed after it. Stripe saves that answer under the
// key and gives it to every retry with the key for 24 hours ("Retries with
// the same key return the saved response, including 500 errors",
// https://docs.stripe.com/api/idempotent_requests), so the create sent
// again can only fail again. Whether the failed create took effect is
// unknown ("treat the result of a 500 request as indeterminate",
// https://docs.stripe.com/error-low-level#server-errors): the next attempt
// looks our key up, and creates under the next key only when it finds
// nothing. A create that got no answer (a timeout, a dropped connection)
// saved none the provider would replay, and its retry needs exactly its
// key: that key is not spent. Nor is one of a type the service cannot look
// up: with nothing to tell whether the failed create made an object, the
// key is all that stands between a retry and a second one.
func (s *sender) spentKey(ctx context.Context) (bool, time.Time) {
	l := s.j.link
	if !l.NeedsLookup || l.ExternalID != "" || s.svc.Config.IdempotencyHeader == "" || l.IdempotencyKey == "" ||
		!s.svc.Conn.CanLookup(l.LocalType) {
		return false, time.Time{}
	}
	// Not the link's last HTTP code, nor its last attempt: either may be
	// the search's that followed the 5xx (a 503 of its own, or no answer),
	// and the key is spent all the same. Only a link that may need a
	// lookup gets here, never a first send.
	a, err := models.LastCreateWithKey(s.e.db.WithContext(ctx), l.ID, l.IdempotencyKey)
	if err != nil {
		if !errors.Is(err, models.ErrNotFound) {
			s.e.log.Warn("could not read the last create; it is sent again with its key", "link", l.ID, "error", err)
		}
		return false, time.Time{}
	}
	return a.HTTPCode >= http.StatusInternalServerError, a.CreatedAt
}

// waitForSearch holds back the lookup after a spent key until a search
// shows what the failed create may have made (see searchLag): a search
// made sooner could miss it, and the create under the next key would make
// a second object. The link goes back to the queue for then, without an
// attempt. It reports whether it held the link back.
func (s *sender) waitForSearch(spentAt time.Time) bool {
	l := s.j.link
	obj := s.svc.Config.Objects[l.LocalType]
	ready := spentAt.Add(searchLag)
	if obj.StrongLookup() || !s.e.clock.Now().Before(ready) {
		return false
	}
	s.out.Status, s.out.NextAttempt = models.StatusRetry, ready
	s.out.LastHTTP, s.out.LastError = l.LastHTTPCode, l.LastError
	s.out.Requested = false // a Sync now waits for the send that goes
	return true
}
