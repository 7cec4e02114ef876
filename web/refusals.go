package web

import (
	"time"

	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/views"
)

// refusalWindow is how far back the pages count refused webhook deliveries.
const refusalWindow = 24 * time.Hour

// webhookServices are the configured services that take webhooks, by name.
func (s *Server) webhookServices() []string {
	var out []string
	for _, name := range s.cfg.ServiceNames() {
		if s.cfg.Services[name].Webhook != nil {
			out = append(out, name)
		}
	}
	return out
}

// webhookHealth reads, for each named service, the deliveries refused in
// the last 24 hours and the time of the last good one: one read of the
// day's refusal counts, and one index seek per service.
func (s *Server) webhookHealth(c echo.Context, services []string) (map[string]views.WebhookHealth, error) {
	out := map[string]views.WebhookHealth{}
	if len(services) == 0 {
		return out, nil
	}
	refused, err := models.RefusalsSince(s.requestDB(c), s.clock.Now().Add(-refusalWindow))
	if err != nil {
		return nil, err
	}
	for _, name := range services {
		last, err := models.LastEventAt(s.requestDB(c), name)
		if err != nil {
			return nil, err
		}
		r := refused[name]
		out[name] = views.WebhookHealth{Service: name, Refused: r.N, LastRefusedAt: r.LastAt,
			LastReason: r.LastReason, LastDetail: r.LastDetail, LastGoodAt: last}
	}
	return out, nil
}
