package web

import (
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// serveMetrics is the /metrics handler: Prometheus's exposition when
// metrics.access is open or token (metricsAuth checks the token), and a
// 404 for everyone when it is closed. The route is registered either way: an
// unregistered /metrics would fall to the pages group and send an anonymous
// scraper to the login page, which reads as a broken target, not an absent one.
func (s *Server) serveMetrics() echo.HandlerFunc {
	if s.cfg.Metrics.Access == "closed" || s.metrics == nil {
		return func(echo.Context) error { return echo.ErrNotFound }
	}
	return echo.WrapHandler(promhttp.HandlerFor(s.metrics, promhttp.HandlerOpts{}))
}
