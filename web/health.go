package web

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/migrations"
)

// healthz says the process is alive; it touches nothing else.
func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// readyz says whether this instance can serve: the database answers and its
// schema is the one this binary expects.
func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	sqlDB, err := s.db.DB()
	if err == nil {
		err = sqlDB.PingContext(ctx)
	}
	if err != nil {
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": "the database does not answer"})
	}
	v, current, err := migrations.Current(s.db.WithContext(ctx))
	if err != nil || !current {
		return c.JSON(http.StatusServiceUnavailable, map[string]any{"status": "unavailable",
			"reason": "the database schema is not current; run syncdesk migrate", "schema_version": v})
	}
	return c.JSON(http.StatusOK, map[string]any{"status": "ready", "schema_version": v})
}
