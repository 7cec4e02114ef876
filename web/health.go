package web

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

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
		return notReady(c, nil, "The database schema is not current; run syncdesk migrate.", map[string]any{"schema_version": v})
	}
	if err := models.ProveWrite(db); err != nil {
		return notReady(c, err, "A write to the database cannot commit.", nil)
	}
	return c.JSON(http.StatusOK, map[string]any{"status": "ready", "schema_version": v})
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
