package web

import (
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/action"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/outbox"
	"github.com/syncdesk/syncdesk/sync/redact"
	"github.com/syncdesk/syncdesk/sync/sandbox"
	"github.com/syncdesk/syncdesk/sync/services"
	"github.com/syncdesk/syncdesk/views"
)

// The secret values the services below are configured with: none of them
// may ever appear on a page.
const (
	crmTokenValue   = "crm-token-Zq8sV1xx"
	literalKeyValue = "literal-key-Hk3pP7xx"
	basePassword    = "base-pass-Yv5mW2xx"
	queryKeyValue   = "query-key-Lr6nB3xx"
	hookLiteral     = "whsec_literal-W9x2xx"
	hookEnvValue    = "whsec_fromenv-R4t6xx"
)

var secretValues = []string{crmTokenValue, literalKeyValue, basePassword, queryKeyValue, hookLiteral, hookEnvValue}

// setupServices serves syncdesk with two services whose headers and webhook
// secrets come from the environment and from the file, the engine asking a
// Pauser at each claim, and the Services routes registered.
func setupServices(t *testing.T, db *gorm.DB) *bundle {
	t.Helper()
	t.Setenv("SYNCDESK_TEST_CRM_TOKEN", crmTokenValue)
	t.Setenv("SYNCDESK_TEST_PAY_HOOK", hookEnvValue)
	cfg := config.Default()
	cfg.TrustedProxies = []string{"127.0.0.0/8"}
	clk := clock.NewFake(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	crm := sandbox.NewCRM(sandbox.Options{})
	crmSrv := httptest.NewServer(crm)
	t.Cleanup(crmSrv.Close)
	crmURL, _ := url.Parse(crmSrv.URL)
	crmURL.User = url.UserPassword("desk", basePassword)
	retry := config.Retry{MaxAttempts: 3, Base: time.Second, Max: time.Minute}
	crmSvc := config.Service{Kind: "http", BaseURL: crmURL.String(), Timeout: 5 * time.Second, Retry: retry, Breaker: config.DefaultBreaker,
		Headers: map[string]string{"Authorization": "Bearer ${SYNCDESK_TEST_CRM_TOKEN}", "X-Api-Key": literalKeyValue,
			"X-Tenant": "${SYNCDESK_TEST_NEVER_SET}"},
		Webhook: &config.Webhook{Scheme: "standard", Secrets: []string{hookLiteral}, Effects: config.EffectSet("crm")},
		Objects: map[string]config.Object{"order": {Remote: "deal", ExternalKey: "site_order_{local_id}", KeyField: "external_key",
			IDField: "id", Create: "POST /deals", Update: "PUT /deals/{external_id}", Lookup: "GET /deals?external_key={external_key}"}}}
	paySvc := config.Service{Kind: "http", BaseURL: "https://pay.example.com/v1?api_key=" + queryKeyValue, Timeout: 10 * time.Second,
		Retry: config.Retry{MaxAttempts: 6, Base: 2 * time.Second, Max: 15 * time.Minute}, IdempotencyHeader: "Idempotency-Key",
		Webhook: &config.Webhook{Scheme: "stripe", Secrets: []string{"${SYNCDESK_TEST_PAY_HOOK}"}, Effects: config.EffectSet("payments")},
		Objects: map[string]config.Object{"payment": {Remote: "payment", ExternalKey: "site_payment_{local_id}", KeyField: "external_key",
			IDField: "id", Create: "POST /payments", Update: "PUT /payments/{external_id}", List: "GET /payments?cursor={cursor}"}}}
	cfg.Services = map[string]config.Service{"crm": crmSvc, "payments": paySvc}
	log := slog.New(slog.DiscardHandler)
	var svcs []outbox.Service
	for _, name := range cfg.ServiceNames() {
		svcs = append(svcs, outbox.Service{Name: name, Config: cfg.Services[name], Conn: connector.NewHTTP(name, cfg.Services[name], redact.New(nil), nil)})
	}
	eng := outbox.New(db, svcs, clk, log, outbox.Options{Concurrency: 4})
	pauser := services.NewPauser(db, cfg.ServiceNames(), clk, log)
	eng.SetPaused(pauser.Paused)
	s, err := New(Deps{DB: db, Config: cfg, Clock: clk, Version: "test", Log: log, Outbox: eng, Pauser: pauser})
	require.NoError(t, err)
	registerServiceRoutes(t, s)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return &bundle{t: t, db: db, clock: clk, srv: srv, cfg: cfg, eng: eng, crm: crm}
}

// registerServiceRoutes adds the Services routes as routes.go is to list
// them, unless it already does.
func registerServiceRoutes(t *testing.T, s *Server) {
	t.Helper()
	for _, r := range s.echo.Routes() {
		if r.Path == "/services" {
			return
		}
	}
	pages := s.echo.Group("", s.requireUser, s.sessionCSRF, noStore)
	operator := s.requireRole(models.RoleOperator)
	pages.GET("/services", s.listServices)
	pages.POST("/services/:name/pause", s.pauseService, operator)
	pages.POST("/services/:name/resume", s.resumeService, operator)
}

func TestServicesPageDescribesServicesWithoutSecrets(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setupServices(t, db)
		r := b.signedIn("root@example.com", models.RoleAdmin).get("/services")
		require.Equal(t, http.StatusOK, r.status, r.body)
		for _, want := range []string{
			`data-testid="service-crm"`, `data-testid="service-payments"`,
			"HTTP", "deal", "create, update, look up",
			"lookup by key after an unknown outcome, before any new create", "idempotency key (Idempotency-Key)",
			"up to 3 attempts, backing off from 1s to 1m", "up to 6 attempts, backing off from 2s to 15m", "10s per call",
			"set from $SYNCDESK_TEST_CRM_TOKEN", "not set: $SYNCDESK_TEST_NEVER_SET is empty", "set from $SYNCDESK_TEST_PAY_HOOK",
			"Standard Webhooks", "Stripe signatures", "/hooks/payments", "https://pay.example.com/v1?… (query hidden)", "desk:xxxxx@",
		} {
			require.Contains(t, r.body, want)
		}
		for _, secret := range secretValues {
			require.NotContains(t, r.body, secret, "a secret value reached the page")
		}
	})
}

// The configuration is for admins (README's HTTP surface); health and the
// pause switch stay for everyone who may use them.
func TestServicesConfigurationIsForAdmins(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setupServices(t, db)
		for _, role := range []models.Role{models.RoleViewer, models.RoleOperator} {
			r := b.signedIn(string(role)+"@example.com", role).get("/services")
			require.Equal(t, http.StatusOK, r.status, r.body)
			for _, hidden := range []string{"https://pay.example.com", "desk:xxxxx@", "$SYNCDESK_TEST_CRM_TOKEN", "per call", "backing off", "create, update"} {
				require.NotContains(t, r.body, hidden, "a %s sees no configuration", role)
			}
			require.Contains(t, r.body, `data-testid="config-hidden-crm"`)
			require.Contains(t, r.body, "An admin can see how crm is configured")
			require.Contains(t, r.body, `data-testid="health-crm"`, "health is for everyone")
			if role == models.RoleViewer {
				require.NotContains(t, r.body, `action="/services/crm/pause"`, "a viewer gets no switch")
			} else {
				require.Contains(t, r.body, `action="/services/crm/pause"`, "an operator keeps the switch")
			}
		}
		r := b.signedIn("root@example.com", models.RoleAdmin).get("/services")
		require.NotContains(t, r.body, "config-hidden-crm")
	})
}

func TestPauseAndResumeFromTheServicesPage(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setupServices(t, db)
		op := b.signedIn("olga@example.com", models.RoleOperator)
		admin := b.signedIn("root@example.com", models.RoleAdmin)
		viewer := b.signedIn("vera@example.com", models.RoleViewer)
		require.NotContains(t, op.get("/").body, `data-testid="paused-banner"`)
		page := op.get("/services").body
		require.Contains(t, page, `action="/services/crm/pause"`)
		require.Contains(t, page, `<label for="reason-crm">`, "the reason field has a label")
		require.Contains(t, page, `Pause sending<span class="sr-only"> to crm</span>`, "each switch names its service to screen readers")

		// A reason too long is refused on the page, which keeps up by
		// asking /services, not the form's address (405 to a poll).
		r := op.post("/services", "/services/crm/pause", url.Values{"reason": {strings.Repeat("x", services.MaxReason+1)}})
		require.Equal(t, http.StatusBadRequest, r.status, r.body)
		require.Contains(t, r.body, "Keep the reason under")
		require.Contains(t, r.body, `hx-get="/services"`)

		r = op.post("/services", "/services/crm/pause", url.Values{"reason": {"provider maintenance"}})
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		require.Equal(t, "/services?done=service-paused", r.header.Get("Location"))
		paused, err := models.IsPaused(db, "crm")
		require.NoError(t, err)
		require.True(t, paused)
		require.EqualValues(t, 1, b.auditCount("service.pause", models.OutcomeSuccess))

		// Loud on every page, for everyone signed in.
		for _, c := range []*client{op, admin, viewer} {
			for _, path := range []string{"/", "/audit", "/services", "/users", "/no-such-page"} {
				body := c.get(path).body
				if path == "/users" && c != admin {
					continue
				}
				require.Contains(t, body, `data-testid="paused-banner"`, "no banner on %s", path)
				require.Contains(t, body, "Sending to crm is paused.", path)
				require.Contains(t, body, "“provider maintenance”", path)
				require.Contains(t, body, "by olga@example.com", path)
				require.Contains(t, body, "nothing is lost", path)
			}
		}
		require.Contains(t, op.get("/services?done=service-paused").body, "Sending is paused.")
		require.Contains(t, op.get("/services?done=service-paused").body, `class="flash flash-warn"`, "a pause is a warning, not a success")
		require.Contains(t, op.get("/services?done=service-resumed").body, `class="flash"`)
		require.Contains(t, op.get("/services").body, `action="/services/crm/resume"`)
		require.NotContains(t, b.client().get("/login").body, "paused-banner", "the sign-in page shows nothing to strangers")

		// A second pause changes nothing; the first one stands.
		r = admin.post("/services", "/services/crm/pause", url.Values{"reason": {"other"}})
		require.Equal(t, "/services?done=service-already-paused", r.header.Get("Location"))
		pauses, err := models.ListPauses(db)
		require.NoError(t, err)
		require.Len(t, pauses, 1)
		require.Equal(t, "olga@example.com", pauses[0].PausedBy)

		r = op.post("/services", "/services/crm/resume", nil)
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		require.Equal(t, "/services?done=service-resumed", r.header.Get("Location"))
		require.EqualValues(t, 1, b.auditCount("service.resume", models.OutcomeSuccess))
		for _, path := range []string{"/", "/services"} {
			require.NotContains(t, viewer.get(path).body, `data-testid="paused-banner"`, path)
		}
		r = op.post("/services", "/services/crm/resume", nil)
		require.Equal(t, "/services?done=service-not-paused", r.header.Get("Location"))
	})
}

// A service its breaker paused before the breaker was turned off in the
// configuration is tested by nothing: the page says to resume it by hand,
// not that it resumes by itself.
func TestAnAutomaticPauseWhoseBreakerIsOffNowSaysToResumeByHand(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setupServices(t, db)
		crm := b.cfg.Services["crm"]
		crm.Breaker.Off = true
		b.cfg.Services["crm"] = crm
		op := b.signedIn("olga@example.com", models.RoleOperator)
		_, _, err := models.Pause(db, models.ServicePause{Service: "crm", PausedBy: models.AutomaticPauser, PausedAt: b.clock.Now(),
			Reason: "paused automatically: 20 calls in a row answered 503"})
		require.NoError(t, err)

		page := op.get("/services").body
		require.Contains(t, page, "Its breaker has been turned off since, so nothing tests crm: resume it by hand once it answers again.")
		require.NotContains(t, page, "sending resumes by itself")
	})
}

// A service its breaker paused says so, and that it resumes by itself; an
// operator can keep it paused, which makes the pause theirs.
func TestAnAutomaticPauseSaysSoAndCanBeKeptByHand(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setupServices(t, db)
		op := b.signedIn("olga@example.com", models.RoleOperator)
		_, _, err := models.Pause(db, models.ServicePause{Service: "crm", PausedBy: models.AutomaticPauser, PausedAt: b.clock.Now(),
			Reason: "paused automatically: 20 calls in a row answered 503"})
		require.NoError(t, err)

		page := op.get("/services").body
		require.Contains(t, page, "by syncdesk (automatic): “paused automatically: 20 calls in a row answered 503”.")
		require.Contains(t, page, "One test call goes every 30s; when crm answers, sending resumes by itself.")
		require.Contains(t, page, `data-testid="keep-paused-crm"`)
		require.Contains(t, page, `action="/services/crm/resume"`)

		b.clock.Advance(2 * time.Minute)
		r := op.post("/services", "/services/crm/pause", url.Values{}) // Keep paused sends no reason
		require.Equal(t, "/services?done=service-paused", r.header.Get("Location"))
		pauses, err := models.ListPauses(db)
		require.NoError(t, err)
		require.Len(t, pauses, 1)
		require.Equal(t, "olga@example.com", pauses[0].PausedBy, "the pause is the operator's now")
		require.False(t, pauses[0].Automatic())
		page = op.get("/services").body
		require.NotContains(t, page, `data-testid="keep-paused-crm"`)
		require.Contains(t, page, "Nothing tests crm and nothing is sent to it until someone resumes it")
	})
}

// Who took over an automatic pause, and when, is kept: the pause still
// says the breaker paused it and why, then who keeps it paused since
// when, on the Services page and in the banner of every page; the audit
// log has it too.
func TestKeepPausedRecordsWhoAndWhen(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setupServices(t, db)
		op := b.signedIn("ana@example.com", models.RoleOperator)
		_, _, err := models.Pause(db, models.ServicePause{Service: "crm", PausedBy: models.AutomaticPauser, PausedAt: b.clock.Now(),
			Reason: "paused automatically: 20 calls in a row answered 503"})
		require.NoError(t, err)
		b.clock.Advance(62 * time.Minute)
		keptAt := b.clock.Now()
		op.post("/services", "/services/crm/pause", url.Values{})

		kept := "Kept paused by ana@example.com at <time datetime=\"" + keptAt.Format(time.RFC3339) + "\" title=\"" +
			keptAt.Format("2006-01-02 15:04:05") + " UTC\">" + keptAt.Format("15:04:05") + " UTC</time>."
		b.clock.Advance(5 * time.Minute)
		page := op.get("/services").body
		require.Contains(t, page, "by syncdesk (automatic): “paused automatically: 20 calls in a row answered 503”.",
			"the breaker paused it, for its reason")
		require.Contains(t, page, `data-testid="kept-paused-crm"`)
		require.Equal(t, 2, strings.Count(page, kept), "on the card and in the banner: %s", kept)
		require.False(t, strings.Contains(page, "</time> by ana@example.com"), "ana did not pause it an hour ago")

		var entry models.AuditEntry
		require.NoError(t, db.Where("action = ? AND actor = ?", action.ServicePause, "ana@example.com").Take(&entry).Error)
		require.Equal(t, "crm", entry.Target)
		require.Equal(t, keptAt, entry.At.UTC())
		require.Equal(t, "kept the automatic pause (paused automatically: 20 calls in a row answered 503)", entry.Detail)
	})
}

func TestViewerCannotPauseOrResume(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setupServices(t, db)
		viewer := b.signedIn("vera@example.com", models.RoleViewer)
		body := viewer.get("/services").body
		require.NotContains(t, body, `/pause"`)
		require.NotContains(t, body, `/resume"`)

		// A forged form, with the viewer's own valid CSRF token.
		r := viewer.post("/services", "/services/crm/pause", url.Values{"reason": {"x"}})
		require.Equal(t, http.StatusForbidden, r.status)
		require.EqualValues(t, 1, b.auditCount("access.denied", models.OutcomeDenied))
		paused, err := models.IsPaused(db, "crm")
		require.NoError(t, err)
		require.False(t, paused)

		_, _, err = models.Pause(db, models.ServicePause{Service: "crm", PausedBy: "olga@example.com", PausedAt: b.clock.Now()})
		require.NoError(t, err)
		r = viewer.post("/services", "/services/crm/resume", nil)
		require.Equal(t, http.StatusForbidden, r.status)
		require.EqualValues(t, 2, b.auditCount("access.denied", models.OutcomeDenied))
		paused, err = models.IsPaused(db, "crm")
		require.NoError(t, err)
		require.True(t, paused, "a refused resume changes nothing")
		require.Zero(t, b.auditCount("service.pause", models.OutcomeSuccess)+b.auditCount("service.resume", models.OutcomeSuccess))
	})
}

func TestPauseRefusesUnknownServicesAndLongReasons(t *testing.T) {
	b := setupServices(t, dbtest.SQLite(t))
	op := b.signedIn("olga@example.com", models.RoleOperator)
	r := op.post("/services", "/services/nope/pause", nil)
	require.Equal(t, http.StatusNotFound, r.status)

	r = op.post("/services", "/services/crm/pause", url.Values{"reason": {strings.Repeat("x", services.MaxReason+1)}})
	require.Equal(t, http.StatusBadRequest, r.status)
	require.Contains(t, r.body, `data-testid="services-error"`)
	require.Contains(t, r.body, "Keep the reason under 200 characters.")
	require.Zero(t, b.auditCount("service.pause", models.OutcomeSuccess))
}

// A pause left by a service since removed from the configuration still
// shows, and can be lifted from the Services page.
func TestOrphanPauseCanBeResumed(t *testing.T) {
	b := setupServices(t, dbtest.SQLite(t))
	_, _, err := models.Pause(b.db, models.ServicePause{Service: "legacy", PausedBy: "olga@example.com", PausedAt: b.clock.Now()})
	require.NoError(t, err)
	op := b.signedIn("olga@example.com", models.RoleOperator)
	body := op.get("/services").body
	require.Contains(t, body, `data-testid="orphan-legacy"`)
	require.Contains(t, body, "Sending to legacy is paused.")
	r := op.post("/services", "/services/legacy/resume", nil)
	require.Equal(t, "/services?done=service-resumed", r.header.Get("Location"))
	require.NotContains(t, op.get("/").body, "paused-banner")
}

func TestServicesPageCountsTheLastHourAndLinksByStatus(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setupServices(t, db)
		now := b.clock.Now()
		crm := b.link("order", "1", "crm", models.StatusRetry)
		b.link("order", "2", "crm", models.StatusFailed)
		b.link("order", "3", "crm", models.StatusFailed)
		pay := b.link("payment", "1", "payments", models.StatusSuccess)
		for _, a := range []struct {
			link    int64
			outcome models.Outcome
			ago     time.Duration
		}{
			{crm, models.OutcomeOK, 5 * time.Minute}, {crm, models.OutcomeOK, 59 * time.Minute},
			{crm, models.OutcomeTemporary, time.Minute}, {crm, models.OutcomePermanent, 61 * time.Minute},
			{pay, models.OutcomeAmbiguous, 30 * time.Minute}, {pay, models.OutcomeOK, 3 * time.Hour},
		} {
			b.attempt(a.link, a.outcome, now.Add(-a.ago))
		}
		// Links by status come from the aggregate refresh-stats keeps.
		require.NoError(t, models.RefreshStats(b.db, now))
		body := b.signedIn("vera@example.com", models.RoleViewer).get("/services").body
		require.Contains(t, body, "; this page updates itself.", "the page says the links were counted, and when")
		for id, want := range map[string]string{"crm-ok": "2", "crm-temporary": "1", "crm-permanent": "0", "crm-ambiguous": "0",
			"payments-ok": "0", "payments-ambiguous": "1"} {
			m := regexp.MustCompile(`data-testid="health-` + id + `">(\d+)<`).FindStringSubmatch(body)
			require.NotNil(t, m, "no count for %s", id)
			require.Equal(t, want, m[1], "calls in the last hour, %s", id)
		}
		require.Contains(t, body, `href="/links?service=crm&amp;status=failed"`)
		require.Contains(t, body, `href="/links?service=crm&amp;status=retry"`)
		require.NotContains(t, body, `href="/links?service=crm&amp;status=success"`, "statuses without links are left out")
		require.Contains(t, body, "All links to crm (3)")
	})
}

// attempt logs a call of a link.
func (b *bundle) attempt(link int64, outcome models.Outcome, at time.Time) {
	b.t.Helper()
	require.NoError(b.t, b.db.Create(&models.Attempt{LinkID: link, Number: 1, Operation: "x.create", Outcome: outcome, CreatedAt: at}).Error)
}

// link inserts a link in a given status and returns its id.
func (b *bundle) link(typ, id, service string, status models.Status) int64 {
	b.t.Helper()
	now := b.clock.Now()
	l := models.Link{LocalType: typ, LocalID: id, ExternalService: service, ExternalKey: typ + "_" + id, Status: status,
		NextAttemptAt: now, CreatedAt: now, UpdatedAt: now}
	require.NoError(b.t, b.db.Create(&l).Error)
	return l.ID
}

// A service that can neither look an object up nor take an Idempotency-Key
// turns every lost create answer into a second object: the Services page
// says so, per type, to everyone.
func TestServicesPageWarnsOfDuplicateRisk(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		cfg := b.cfg
		cfg.Services = maps.Clone(cfg.Services)
		cfg.Services["sms"] = config.Service{Kind: "http", BaseURL: "https://sms.example.com", Timeout: time.Second,
			Retry: config.Retry{MaxAttempts: 3, Base: time.Second, Max: time.Minute},
			Objects: map[string]config.Object{
				"message": {Remote: "sms", ExternalKey: "msg_{local_id}", IDField: "id", Create: "POST /sms"},
				"contact": {Remote: "contact", ExternalKey: "c_{local_id}", KeyField: "ref", IDField: "id", Create: "POST /contacts",
					Lookup: "GET /contacts?ref={external_key}"},
				"lead": {Remote: "lead", ExternalKey: "l_{local_id}", KeyField: "ref", IDField: "id", Create: "POST /leads",
					Lookup: "GET /leads/search?ref={external_key}", LookupConsistency: "eventual"},
			}}
		cfg.Services["mail"] = config.Service{Kind: "http", BaseURL: "https://mail.example.com", Timeout: time.Second,
			IdempotencyHeader: "Idempotency-Key", Retry: config.Retry{MaxAttempts: 3, Base: time.Second, Max: time.Minute},
			Objects: map[string]config.Object{"message": {Remote: "mail", ExternalKey: "m_{local_id}", IDField: "id", Create: "POST /mail"}}}
		s, err := New(Deps{DB: db, Config: cfg, Clock: b.clock, Version: "test", Log: slog.New(slog.DiscardHandler), Outbox: b.eng})
		require.NoError(t, err)
		b.srv = httptest.NewServer(s.Handler())
		t.Cleanup(b.srv.Close)

		for _, role := range []models.Role{models.RoleViewer, models.RoleAdmin} {
			body := b.signedIn(string(role)+"@example.com", role).get("/services").body
			warning := regexp.MustCompile(`(?s)data-testid="duplicate-risk-sms".*?</div>`).FindString(body)
			require.NotEmpty(t, warning, "a %s is warned about sms", role)
			require.Contains(t, warning, "Creates of lead, message can make duplicates in sms.", "a search that can lag is no guard")
			require.NotContains(t, warning, "contact", "contact can be looked up")
			require.Contains(t, warning, "syncdesk cannot tell whether a create it lost the answer to went through: "+
				"configure an upsert, a lookup that sees new objects at once, or the provider's idempotency header.")
			for id, words := range map[string]string{
				"sms-contact":  "lookup by key after an unknown outcome, before any new create",
				"sms-lead":     "only a search that can lag: a lost answer may become a second object",
				"sms-message":  "none: a lost answer may become a second object",
				"mail-message": "idempotency key (Idempotency-Key)",
			} {
				line := regexp.MustCompile(`(?s)data-testid="guarantee-` + id + `".*?</li>`).FindString(body)
				require.Contains(t, line, words, id)
			}
			require.NotContains(t, body, `data-testid="duplicate-risk-mail"`, "mail takes an Idempotency-Key")
			require.NotContains(t, body, `data-testid="duplicate-risk-crm"`, "crm looks orders up")
		}
	})
}

// What the provider's headers taught the rate limiter, and a hold every
// instance keeps, are on the Services page: the hold for everyone, the
// learned limit with the configuration.
func TestServicesPageShowsTheLearnedPaceAndAHold(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setupServices(t, db)
		require.NoError(t, models.ConfigureRateLimit(db, "crm", 0, 0))
		_, _, err := models.LearnRateLimit(db, "crm", models.LearnedRate{Limit: 50, Window: 10 * time.Second, Rate: 4.3, Burst: 4}, time.Time{})
		require.NoError(t, err)
		_, err = models.BlockRateLimit(db, "crm", time.Hour, "429 Too Many Requests, Retry-After 1h0m0s", time.Time{})
		require.NoError(t, err)

		viewer := b.signedIn("viewer@example.com", models.RoleViewer).get("/services").body
		held := regexp.MustCompile(`data-testid="pace-held-crm">([^<]*)<`).FindStringSubmatch(viewer)
		require.Len(t, held, 2, "everyone sees the hold")
		require.Regexp(t, `^Holding off until \d\d:\d\d:\d\d UTC, all instances: 429 Too Many Requests, Retry-After 1h0m0s$`, held[1])
		require.NotContains(t, viewer, `data-testid="pace-held-payments"`)

		admin := b.signedIn("root@example.com", models.RoleAdmin).get("/services").body
		require.Contains(t, admin, "crm allows 50 calls per 10s (its headers say); syncdesk keeps to 4.3 a second")
	})
}

// Everyone, not only admins, reads what each webhook event does.
func TestServicesPageSaysWhatEachEventDoes(t *testing.T) {
	b := setupServices(t, dbtest.SQLite(t))
	r := b.signedIn("vic@example.com", models.RoleViewer).get("/services")
	require.Equal(t, http.StatusOK, r.status, r.body)
	for _, want := range []string{
		`data-testid="event-effects-payments"`,
		"<code>payment.succeeded</code>: sets status to paid (never back: pending → paid → refunded)",
		"<code>deal.deleted</code>: marks the object deleted; a person re-creates it from the link page",
		"<code>deal.updated</code>: where the provider holds other values, pushes ours again",
		"<code>contact.created</code>: links the object to the record whose key it carries, or keeps it as a new crm_contact record",
	} {
		require.Contains(t, r.body, want)
	}

	hub := config.Webhook{Scheme: "hubspot", Secrets: []string{"k"}, EventID: ".eventId", Effects: config.Effects{Table: map[string]config.Effect{
		"*":                      {Ignore: true},
		"*.deletion":             {MarkDeleted: config.DeletedRecreate},
		"contact.propertyChange": {UpdateFields: config.Body{Fields: map[string]string{"last_name": ".v", "email": ".v"}}},
	}}}
	got := eventEffects("hubspot", hub)
	require.Equal(t, []views.EventEffect{
		{On: "contact.propertyChange", Does: "updates email, last_name from the event"},
		{On: "*.deletion", Does: "marks the object deleted and creates it again"},
		{On: "*", Does: "ignored"},
	}, got, "exact types first, then patterns from the most specific, as the inbox chooses")
}
