package web

import (
	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/views"
)

func (s *Server) showOverview(c echo.Context) error {
	counts, err := models.CountLinksByStatus(s.db)
	if err != nil {
		return err
	}
	v := views.Overview{}
	for _, st := range models.Statuses {
		v.Statuses = append(v.Statuses, string(st))
	}
	byService := map[string]int{}
	for _, sc := range counts {
		i, ok := byService[sc.Service]
		if !ok {
			i = len(v.Services)
			byService[sc.Service] = i
			v.Services = append(v.Services, views.ServiceCounts{Service: sc.Service, Counts: map[string]int64{}})
		}
		v.Services[i].Counts[string(sc.Status)] += sc.N
		v.Services[i].Total += sc.N
	}
	return s.render(c, views.OverviewPage(s.page(c, "Overview", "/"), v))
}
