package web

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/migrations"
	"github.com/syncdesk/syncdesk/models"
)

// healthz says the process is alive; it touches nothing else.
func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// readyTimeout bounds a readiness probe: a database that takes longer to
// answer and commit is not ready.
const readyTimeout = 2 * time.Second

// readyz says whether this instance can serve: the database answers, its
// schema is the one this binary expects, and a write commits — a full disk
// or a read-only server still answers pings and reads.
func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), readyTimeout)
	defer cancel()
	db := s.requestDB(c).WithContext(ctx)
	if err := models.Ping(ctx, db); err != nil {
		return notReady(c, err, "The database does not answer.", nil)
	}
	v, current, err := migrations.Current(db)
	if err != nil || !current {
		return notReady(c, err, "The database schema is not current; run syncdesk migrate.", map[string]any{"schema_version": v})
	}
	if err := s.written.prove(db); err != nil {
		return notReady(c, err, "A write to the database cannot commit.", nil)
	}
	return c.JSON(http.StatusOK, map[string]any{"status": "ready", "schema_version": v})
}

// writeProofFor is how long a proved write vouches for the next /readyz:
// the probe is open to anyone, and each proof takes the database's write
// lock (SQLite has one), so a flood of probes must not compete with the
// sender. A failure is never remembered: the next probe tries again.
const writeProofFor = time.Second

// writeProof remembers when a write last committed for /readyz.
type writeProof struct {
	mu   sync.Mutex
	last time.Time // monotonic: time.Now, not the injectable clock
}

// prove commits a write unless one committed less than writeProofFor ago.
func (w *writeProof) prove(db *gorm.DB) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.last.IsZero() && time.Since(w.last) < writeProofFor {
		return nil
	}
	if err := models.ProveWrite(db); err != nil {
		return err
	}
	w.last = time.Now()
	return nil
}

// notReady answers 503 with the reason in words: the outage's own when err
// is one, else fallback.
func notReady(c echo.Context, err error, fallback string, extra map[string]any) error {
	body := map[string]any{"status": "unavailable", "reason": fallback}
	var down *models.UnavailableError
	if models.AsUnavailable(err, &down) {
		body["reason"] = down.Reason
	}
	for k, v := range extra {
		body[k] = v
	}
	c.Response().Header().Set("Retry-After", retryAfterSeconds)
	return c.JSON(http.StatusServiceUnavailable, body)
}
