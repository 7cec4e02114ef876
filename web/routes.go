package web

import (
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/static"
)

// publicPrefixes are the only paths served without a session or token. The
// route-crawl test fails when a route outside them answers without one.
var publicPrefixes = []string{"/login", "/healthz", "/readyz", "/static/", "/hooks/", "/metrics", "/api/openapi.json"}

// routes is the table of contents of the application: every route is here.
func (s *Server) routes() error {
	e := s.echo
	e.Use(nameSpan, s.recoverPanics, middleware.RequestID(), s.logRequests, s.securityHeaders, readableText, s.loadSession)

	// Open to everyone.
	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.StaticFS("/static", echo.MustSubFS(static.FS, "."))
	e.GET("/login", s.showLogin, s.loginCSRF)
	e.POST("/login", s.login, readableForm, s.loginCSRF)
	e.POST("/hooks/:service", s.receiveHook)
	// Open, behind its own bearer token (scrapers do not sign in), or closed: 404.
	e.GET("/metrics", s.serveMetrics(), s.metricsAuth)

	// Pages: a session, then this origin and the session's CSRF token on every state change.
	pages := e.Group("", readableForm, s.requireUser, s.sessionCSRF, noStore)
	pages.POST("/logout", s.logout)
	pages.GET("/", s.showOverview)
	pages.GET("/audit", s.listAudit)

	operator := s.requireRole(models.RoleOperator)
	// Role checks go on each route: a Group("") with middleware would also
	// catch every unknown path and answer 403 instead of 404.
	admin := s.requireRole(models.RoleAdmin)
	pages.GET("/links", s.listLinks)
	pages.GET("/links/:id", s.showLink)
	pages.GET("/links/:id/status", s.linkStatus)
	pages.POST("/links/:id/sync", s.syncLink, operator)
	pages.POST("/links/:id/fail", s.failLink, operator)
	pages.POST("/links/:id/recreate", s.recreateLink, operator)
	pages.GET("/records/:type/:id", s.showRecord, recordKey)
	pages.GET("/failed", s.listFailed)
	pages.GET("/failed/group", s.showFailedGroup)
	pages.POST("/failed/retry", s.askRetry, operator)
	pages.POST("/failed/retry/confirm", s.retryConfirmed, operator)
	// Put aside: failed links acknowledged with a reason, and brought back.
	pages.POST("/links/:id/aside", s.putAsideLink, operator)
	pages.POST("/links/:id/back", s.bringBackLink, operator)
	pages.POST("/failed/aside", s.putAsideGroup, operator)
	pages.POST("/failed/back", s.bringBackGroup, operator)
	pages.GET("/events", s.listEvents)
	pages.GET("/events/:service/:id", s.showEvent)
	pages.POST("/events/:service/:id/replay", s.replayEvent, operator)
	pages.GET("/schedules", s.listSchedules, admin)
	pages.POST("/schedules/:name/run", s.runSchedule, admin)
	pages.GET("/services", s.listServices)
	pages.POST("/services/:name/pause", s.pauseService, operator)
	pages.POST("/services/:name/resume", s.resumeService, operator)
	pages.POST("/sources/:name/pause", s.pauseSource, operator)
	pages.POST("/sources/:name/resume", s.resumeSource, operator)
	pages.GET("/alerts", s.listAlerts)
	pages.POST("/alerts/:id/acknowledge", s.acknowledgeIncident, operator)
	pages.GET("/reconcile", s.listRuns)
	pages.POST("/reconcile/start", s.startRun, operator, s.reconciling)
	pages.GET("/reconcile/:id", s.showRun)
	pages.GET("/reconcile/:id/progress", s.runProgressFragment)
	pages.GET("/reconcile/:id/discrepancies.csv", s.exportDiscrepancies)
	pages.POST("/reconcile/:id/confirm", s.confirmRun, operator, s.reconciling)
	pages.POST("/reconcile/:id/cancel", s.cancelRun, operator, s.reconciling)
	// h-recon (issue 14): reconciliation actions and the record's check.
	pages.POST("/reconcile/:id/apply", s.applyRun, operator, s.reconciling)
	pages.POST("/reconcile/:id/discrepancies/:did/resolve", s.resolveDiscrepancy, operator, s.reconciling)
	pages.POST("/records/:type/:id/check", s.checkRecord, operator, recordKey)

	pages.GET("/users", s.listUsers, admin)
	pages.POST("/users", s.addUser, admin)
	pages.POST("/users/disable", s.disableUser, admin)
	pages.POST("/users/role", s.changeRole, admin)
	pages.POST("/users/reset", s.resetPassword, admin)
	pages.POST("/users/enable", s.enableUser, admin)
	pages.POST("/tokens", s.createToken, admin)
	pages.POST("/tokens/revoke", s.revokeToken, admin)

	// The JSON API for the business application: a bearer token, no cookies, no CSRF.
	// Its description is open to all; openapi_test.go fails when a route below is not in it.
	openapi, err := serveOpenAPI()
	if err != nil {
		return err
	}
	e.GET("/api/openapi.json", openapi)
	api := e.Group("/api/v1", s.requireToken, noStore)
	api.GET("/links", s.apiListLinks)
	api.POST("/links/:id/sync", s.apiSyncLink)
	api.PUT("/records/:type/:id", s.apiPutRecord, recordKey)
	api.DELETE("/records/:type/:id", s.apiDeleteRecord, recordKey)
	api.POST("/records", s.apiPostRecords)
	api.GET("/records/:type/:id", s.apiGetRecord, recordKey)
	api.POST("/events/:service/:id/replay", s.apiReplayEvent)
	return nil
}
