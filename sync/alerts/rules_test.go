package alerts

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/notify"
)

type ruleCase struct {
	name, rule, subject, title string
	text                       string // what the text says, where a case checks it
	cause, clear               func(t *testing.T, b *bundle)
}

var ruleCases = []ruleCase{
	{name: "service paused by hand", rule: ServicePaused, subject: "crm", title: "crm has been paused for 11 minutes",
		cause: func(t *testing.T, b *bundle) {
			_, _, err := models.Pause(b.db, models.ServicePause{Service: "crm", PausedBy: "ana@example.com", PausedAt: b.clock.Now(), Reason: "maintenance"})
			require.NoError(t, err)
			b.clock.Advance(11 * time.Minute)
		},
		clear: func(t *testing.T, b *bundle) {
			_, err := models.Resume(b.db, "crm")
			require.NoError(t, err)
		}},
	{name: "failed links over the limit", rule: FailedLinks, subject: "crm", title: "crm has 60 failed links",
		cause: func(t *testing.T, b *bundle) {
			addLinks(t, b.db, "crm", models.StatusFailed, 60, b.clock.Now())
			require.NoError(t, models.RefreshLinkCounts(b.db, b.clock.Now()))
		},
		clear: func(t *testing.T, b *bundle) {
			require.NoError(t, b.db.Model(&models.Link{}).Where("status = 'failed'").Update("status", models.StatusSuccess).Error)
			require.NoError(t, models.RefreshLinkCounts(b.db, b.clock.Now()))
		}},
	{name: "failed links rising", rule: FailedLinks, subject: "crm", title: "Failed links of crm rose by 25 in 15 minutes",
		cause: func(t *testing.T, b *bundle) {
			addLinks(t, b.db, "crm", models.StatusFailed, 25, b.clock.Now())
			require.NoError(t, models.RefreshLinkCounts(b.db, b.clock.Now()))
		},
		clear: func(t *testing.T, b *bundle) { b.clock.Advance(16 * time.Minute) }},
	{name: "stuck queue", rule: StuckQueue, subject: "erp", title: "Links to erp have waited 20 minutes to be sent",
		// Operators read it too, in mail and chat: Schedules is an admin's page.
		text: "Check on Services whether erp is paused, rate-limited or slow; an admin sees on Schedules whether the send task runs.",
		cause: func(t *testing.T, b *bundle) {
			addLinks(t, b.db, "erp", models.StatusRetry, 3, b.clock.Now().Add(-20*time.Minute))
		},
		clear: func(t *testing.T, b *bundle) {
			require.NoError(t, b.db.Model(&models.Link{}).Where("1 = 1").Update("status", models.StatusSuccess).Error)
		}},
	{name: "webhooks refused", rule: RefusedWebhooks, subject: "stripe", title: "15 webhooks from stripe refused in 5 minutes",
		cause: func(t *testing.T, b *bundle) {
			require.NoError(t, models.RecordRefusals(b.db, "stripe", models.RefusedSignature, 12, b.clock.Now(), "no secret matches"))
			require.NoError(t, models.RecordRefusals(b.db, "stripe", models.RefusedTimestamp, 3, b.clock.Now(), "too old"))
			require.NoError(t, models.RecordRefusals(b.db, "stripe", models.RefusedShape, 50, b.clock.Now(), "not JSON"))
		},
		clear: func(t *testing.T, b *bundle) { b.clock.Advance(10 * time.Minute) }},
	{name: "reconciliation waiting for a confirmation", rule: ReconcileWaiting, subject: "crm", title: "Reconciliation run 1 of crm is waiting for someone to confirm it",
		cause: func(t *testing.T, b *bundle) {
			run := models.ReconciliationRun{Service: "crm", Status: models.RunAwaiting, TriggeredBy: "schedule", StartedAt: b.clock.Now()}
			require.NoError(t, b.db.Create(&run).Error)
		},
		clear: func(t *testing.T, b *bundle) {
			require.NoError(t, b.db.Model(&models.ReconciliationRun{}).Where("1 = 1").Update("status", models.RunCompleted).Error)
		}},
	{name: "reconciliation waiting for a person", rule: ReconcileWaiting, subject: "crm", title: "Reconciliation run 1 of crm has 1 finding waiting for a person",
		cause: func(t *testing.T, b *bundle) {
			run := models.ReconciliationRun{Service: "crm", Status: models.RunCompleted, TriggeredBy: "schedule", StartedAt: b.clock.Now()}
			require.NoError(t, b.db.Create(&run).Error)
			d := models.Discrepancy{RunID: run.ID, Kind: "duplicate_remote", Status: models.DiscrepancyReported, LocalType: "order", LocalID: "1", CreatedAt: b.clock.Now()}
			require.NoError(t, b.db.Create(&d).Error)
		},
		clear: func(t *testing.T, b *bundle) {
			require.NoError(t, b.db.Model(&models.Discrepancy{}).Where("1 = 1").Update("resolution", "dismissed").Error)
		}},
	{name: "task failing", rule: TaskFailing, subject: "prune-events", title: "The scheduled task prune-events failed 3 times in a row",
		text: "Fix the cause; then an admin runs it now on Schedules to check.",
		cause: func(t *testing.T, b *bundle) {
			require.NoError(t, models.RegisterTask(b.db, "prune-events", b.clock.Now(), b.clock.Now()))
			for range 3 {
				finishTask(t, b.db, "prune-events", "database is locked", b.clock.Now())
			}
		},
		clear: func(t *testing.T, b *bundle) { finishTask(t, b.db, "prune-events", "", b.clock.Now()) }},
}

// Each rule opens one incident when its condition holds, sends it once,
// again once per repeat interval while it holds, and "resolved" after.
func TestEachRuleFiresOnceRepeatsAndResolves(t *testing.T) {
	for _, tc := range ruleCases {
		t.Run(tc.name, func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
				b := setup(t, db, config.Alerts{Repeat: 2 * time.Minute, DeskURL: "https://desk.example.com"})
				incident := driveRule(t, b, tc, func(t *testing.T, want []notify.State, why string) {
					require.Equal(t, want, b.states(), why)
				})
				msgs := b.rec.messages()
				m := msgs[0]
				require.Contains(t, m.Title, tc.title)
				require.NotEmpty(t, m.Text)
				require.Contains(t, m.Text, tc.text)
				require.Contains(t, m.URL, "https://desk.example.com/")
				require.Equal(t, incident, m.Incident)
				require.Equal(t, msgs[0].Incident, msgs[2].Incident)
				require.NotEqual(t, msgs[0].ID, msgs[1].ID, "each notification its own id")
			})
		})
	}
}

// driveRule takes a rule through its incident on b's fake clock, with a
// repeat interval of 2 minutes: nothing, then the cause, once opened, not
// again within the interval, repeated once after it, resolved once cleared.
// sent checks after each step that what was sent so far is want. It
// returns the incident's id.
func driveRule(t *testing.T, b *bundle, tc ruleCase, sent func(t *testing.T, want []notify.State, why string)) int64 {
	t.Helper()
	b.step(t) // the samples the rising rules compare with
	sent(t, nil, "nothing is wrong yet")
	b.clock.Advance(time.Minute)
	tc.cause(t, b)
	b.step(t)
	b.step(t)
	open, err := models.OpenIncidents(b.db)
	require.NoError(t, err)
	require.Len(t, open, 1, "one incident")
	require.Equal(t, tc.rule, open[0].Rule)
	require.Equal(t, tc.subject, open[0].Subject)
	incident := open[0].ID
	sent(t, []notify.State{notify.Opened}, "opened once")

	b.clock.Advance(time.Minute)
	b.step(t)
	sent(t, []notify.State{notify.Opened}, "not again before the repeat interval")
	b.clock.Advance(time.Minute)
	b.step(t)
	b.step(t)
	sent(t, []notify.State{notify.Opened, notify.Repeated}, "once per repeat interval")

	tc.clear(t, b)
	b.step(t)
	b.step(t)
	sent(t, []notify.State{notify.Opened, notify.Repeated, notify.Resolved}, "resolved once cleared")
	open, err = models.OpenIncidents(b.db)
	require.NoError(t, err)
	require.Empty(t, open)
	return incident
}

// Between notifications an open incident's words follow what the check
// finds, so the Alerts page never shows an old count; nobody is told of
// the change until the repeat, which carries the new words.
func TestAnOpenIncidentsWordsFollowTheCount(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db, config.Alerts{Repeat: 10 * time.Minute})
		addLinks(t, db, "crm", models.StatusFailed, 60, b.clock.Now())
		require.NoError(t, models.RefreshLinkCounts(db, b.clock.Now()))
		b.step(t)
		b.clock.Advance(time.Minute)
		addLinks(t, db, "crm", models.StatusFailed, 40, b.clock.Now())
		require.NoError(t, models.RefreshLinkCounts(db, b.clock.Now()))
		b.step(t)
		open, err := models.OpenIncidents(db)
		require.NoError(t, err)
		require.Len(t, open, 1)
		require.Equal(t, "crm has 100 failed links", open[0].Title)
		require.Contains(t, open[0].Text, "More than 50 links of crm failed")
		require.Equal(t, []notify.State{notify.Opened}, b.states(), "nobody is told before the repeat")
		require.Contains(t, b.rec.messages()[0].Title, "crm has 60 failed links", "the opening's notification keeps its words")

		b.clock.Advance(10 * time.Minute)
		b.step(t)
		require.Equal(t, []notify.State{notify.Opened, notify.Repeated}, b.states())
		require.Contains(t, b.rec.messages()[1].Title, "crm has 100 failed links")
	})
}

// A paused service's links wait on purpose: the service_paused rule says
// so, the stuck_queue rule does not.
func TestAPausedServicesLinksAreNoStuckQueue(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db, config.Alerts{Rules: config.AlertRules{ServicePaused: config.AfterRule{Off: true}}})
		addLinks(t, db, "crm", models.StatusNew, 2, b.clock.Now().Add(-time.Hour))
		addLinks(t, db, "erp", models.StatusRetry, 2, b.clock.Now().Add(-time.Hour))
		addLinks(t, db, "shop", models.StatusNew, 2, b.clock.Now().Add(-5*time.Minute)) // not long enough
		_, _, err := models.Pause(db, models.ServicePause{Service: "crm", PausedBy: "ana@example.com", PausedAt: b.clock.Now()})
		require.NoError(t, err)
		b.step(t)
		open, err := models.OpenIncidents(db)
		require.NoError(t, err)
		require.Len(t, open, 1)
		require.Equal(t, StuckQueue, open[0].Rule)
		require.Equal(t, "erp", open[0].Subject)
	})
}

// A rule turned off tells nobody of its incidents any more: they resolve,
// saying so, not that the problem cleared.
func TestARuleTurnedOffResolvesItsIncidents(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db, config.Alerts{})
		openPause(t, b)
		require.NoError(t, b.a.Deliver(context.Background()))
		off := New(db, config.Alerts{Rules: config.AlertRules{ServicePaused: config.AfterRule{Off: true}}},
			map[string]notify.Channel{"rec": b.rec}, b.clock, nil)
		require.NoError(t, off.Check(context.Background()))
		require.NoError(t, off.Deliver(context.Background()))
		require.Equal(t, []notify.State{notify.Opened, notify.Resolved}, b.states())
		last := b.rec.messages()[1]
		require.Contains(t, last.Text, "Its alert rule was turned off at ")
		require.Contains(t, last.Text, "whether the problem is over was not checked")
		require.NotContains(t, last.Text, "Nothing more to do")
	})
}

// A check that began before another instance's opened an incident does
// not resolve it on its older reads.
func TestACheckDoesNotResolveAnIncidentOpenedAfterItBegan(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db, config.Alerts{})
		opened, err := models.OpenIncident(db, models.Incident{Rule: ServicePaused, Subject: "crm"},
			models.IncidentChange{State: string(notify.Opened), Title: "crm paused", Text: "x", At: b.clock.Now().Add(time.Second)})
		require.NoError(t, err)
		require.True(t, opened)
		require.NoError(t, b.a.Check(context.Background()))
		open, err := models.OpenIncidents(db)
		require.NoError(t, err)
		require.Len(t, open, 1, "left to a later check")
		b.clock.Advance(2 * time.Second)
		require.NoError(t, b.a.Check(context.Background()))
		open, err = models.OpenIncidents(db)
		require.NoError(t, err)
		require.Empty(t, open, "a later check resolves it")
	})
}

// "Keep paused" makes an automatic pause a person's: the service has been
// paused since the breaker paused it, so its incident stays open (its
// words now say who keeps it paused), and nobody is told it cleared.
func TestAnAutomaticPauseKeptByHandKeepsItsIncidentOpen(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db, config.Alerts{Repeat: time.Hour})
		pausedAt := b.clock.Now()
		_, _, err := models.Pause(db, models.ServicePause{Service: "crm", PausedBy: models.AutomaticPauser, PausedAt: pausedAt,
			Reason: "paused automatically: 20 calls in a row answered 503"})
		require.NoError(t, err)
		b.clock.Advance(11 * time.Minute)
		b.step(t)
		require.Equal(t, []notify.State{notify.Opened}, b.states())

		keptAt := b.clock.Now()
		held, created, err := models.Pause(db, models.ServicePause{Service: "crm", PausedBy: "ana@example.com", PausedAt: keptAt})
		require.NoError(t, err)
		require.True(t, created, "the person's pause takes the automatic one over")
		require.Equal(t, pausedAt, held.PausedAt.UTC(), "paused since the breaker paused it")
		require.Equal(t, "paused automatically: 20 calls in a row answered 503", held.Reason, "for the breaker's reason")
		require.NotNil(t, held.KeptAt)
		require.Equal(t, keptAt, held.KeptAt.UTC(), "kept paused by ana from then")
		for range 3 {
			b.clock.Advance(5 * time.Minute)
			b.step(t)
		}
		require.Equal(t, []notify.State{notify.Opened}, b.states(), "no resolved, no second opened while it stays paused")
		open, err := models.OpenIncidents(db)
		require.NoError(t, err)
		require.Len(t, open, 1)
		require.Equal(t, "crm has been paused for 26 minutes", open[0].Title)
		require.Equal(t, "syncdesk paused crm by itself (paused automatically: 20 calls in a row answered 503); "+
			"ana@example.com kept it paused at 2026-12-01 09:11 UTC, so nothing tests the provider. "+
			"Its links wait and keep their attempts. Resume it on Services when the provider is ready.", open[0].Text,
			"the incident says who took the pause over, and when")
	})
}

// Failed links put aside are dealt with: they leave Failed, where the
// alert sends people, so they no longer hold its incident open. The pages'
// counts still show them among the failed.
func TestFailedLinksPutAsideResolveTheirIncident(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db, config.Alerts{Repeat: time.Hour})
		addLinks(t, db, "crm", models.StatusFailed, 60, b.clock.Now())
		addLinks(t, db, "erp", models.StatusFailed, 3, b.clock.Now())
		require.NoError(t, models.RefreshLinkCounts(db, b.clock.Now()))
		b.step(t)
		require.Equal(t, []notify.State{notify.Opened}, b.states())

		var ids []int64
		require.NoError(t, db.Model(&models.Link{}).Where("external_service = 'crm'").Pluck("id", &ids).Error)
		n, err := models.PutAside(db, ids, "ana@example.com", "known bad orders", b.clock.Now())
		require.NoError(t, err)
		require.EqualValues(t, 60, n)
		b.clock.Advance(time.Minute)
		require.NoError(t, models.RefreshLinkCounts(db, b.clock.Now()))
		b.step(t)
		require.Equal(t, []notify.State{notify.Opened, notify.Resolved}, b.states(), "resolved once all are put aside")
		b.clock.Advance(2 * time.Hour)
		b.step(t)
		require.Equal(t, []notify.State{notify.Opened, notify.Resolved}, b.states(), "and not opened again")

		counts, err := models.LinkCounts(db)
		require.NoError(t, err)
		require.Equal(t, []models.StatLinkCount{
			{Service: "crm", Status: "failed", N: 60, CountedAt: b.clock.Now().Add(-2 * time.Hour)},
			{Service: "erp", Status: "failed", N: 3, CountedAt: b.clock.Now().Add(-2 * time.Hour)},
		}, utc(counts), "the pages' counts keep the links put aside among the failed")
		onList, err := models.FailedListCounts(db)
		require.NoError(t, err)
		require.Equal(t, map[string]int64{"crm": 0, "erp": 3}, byService(onList))
	})
}

func utc(counts []models.StatLinkCount) []models.StatLinkCount {
	for i := range counts {
		counts[i].CountedAt = counts[i].CountedAt.UTC()
	}
	return counts
}

func byService(counts []models.StatLinkCount) map[string]int64 {
	out := map[string]int64{}
	for _, c := range counts {
		out[c.Service] = c.N
	}
	return out
}

// A service whose failed links all went is no longer sampled; when they
// rise again hours later, the rise counts from 0, not from its last
// sample, and that old sample is pruned once a newer check says 0.
func TestAFailedLinksRiseAfterADropToNoneCountsFromZero(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db, config.Alerts{})
		dropFailedToNone(t, b, db)
		for range 12 {
			b.clock.Advance(5 * time.Minute)
			b.step(t)
		}
		var kept []models.AlertSample
		require.NoError(t, db.Where("rule = ? AND subject = 'crm'", FailedLinks).Find(&kept).Error)
		require.Empty(t, kept, "no sample of crm left from before it dropped to none")

		requireRiseOf25FromNone(t, b, db)
	})
}

// dropFailedToNone gives crm 10 failed links, samples them, then fixes
// them all a minute later: crm drops out of the counts.
func dropFailedToNone(t *testing.T, b *bundle, db *gorm.DB) {
	t.Helper()
	addLinks(t, db, "crm", models.StatusFailed, 10, b.clock.Now())
	require.NoError(t, models.RefreshLinkCounts(db, b.clock.Now()))
	b.step(t)
	b.clock.Advance(time.Minute)
	require.NoError(t, db.Model(&models.Link{}).Where("1 = 1").Update("status", models.StatusSuccess).Error)
	require.NoError(t, models.RefreshLinkCounts(db, b.clock.Now()))
}

// requireRiseOf25FromNone gives crm 25 failed links at once and requires
// the one incident of a rise counted from none.
func requireRiseOf25FromNone(t *testing.T, b *bundle, db *gorm.DB) {
	t.Helper()
	addLinks(t, db, "crm", models.StatusFailed, 25, b.clock.Now())
	require.NoError(t, models.RefreshLinkCounts(db, b.clock.Now()))
	b.step(t)
	open, err := models.OpenIncidents(db)
	require.NoError(t, err)
	require.Len(t, open, 1, "a rise of 25 from none")
	require.Equal(t, "Failed links of crm rose by 25 in 15 minutes", open[0].Title)
}

// The title of refused webhooks says the rule's window, not how old the
// sample the count is taken from is.
func TestRefusedWebhooksAreCountedInTheRulesWindow(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db, config.Alerts{})
		require.NoError(t, models.RecordRefusals(db, "stripe", models.RefusedSignature, 1, b.clock.Now(), "no secret matches"))
		b.step(t)
		b.clock.Advance(3*24*time.Hour - time.Minute)
		b.step(t)
		b.clock.Advance(30 * time.Second)
		require.NoError(t, models.RecordRefusals(db, "stripe", models.RefusedSignature, 12, b.clock.Now(), "no secret matches"))
		b.clock.Advance(30 * time.Second)
		b.step(t)
		open, err := models.OpenIncidents(db)
		require.NoError(t, err)
		require.Len(t, open, 1)
		require.Equal(t, "12 webhooks from stripe refused in 5 minutes", open[0].Title)
	})
}

// The same before the old sample is pruned: a check after the drop
// sampled no crm, and that is the baseline a window later.
func TestAFailedLinksRiseSoonAfterADropToNoneCountsFromZero(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db, config.Alerts{})
		dropFailedToNone(t, b, db)
		b.step(t)
		b.clock.Advance(16 * time.Minute)
		requireRiseOf25FromNone(t, b, db)
	})
}

// A task removed from the configuration runs no more, so its failures in a
// row never end: the scheduler's task names leave its row out, and its
// incident resolves.
func TestAFailingTaskNoLongerConfiguredResolves(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db, config.Alerts{})
		require.NoError(t, models.RegisterTask(db, "import-legacy", b.clock.Now(), b.clock.Now()))
		for range 3 {
			finishTask(t, db, "import-legacy", "connection refused", b.clock.Now())
		}
		b.a.SetTasks([]string{"import-legacy", "prune-events"})
		b.step(t)
		require.Equal(t, []notify.State{notify.Opened}, b.states())

		b.a.SetTasks([]string{"prune-events"}) // a restart without it
		b.clock.Advance(time.Minute)
		b.step(t)
		require.Equal(t, []notify.State{notify.Opened, notify.Resolved}, b.states())
	})
}

// An automatic pause's alert says what will lift it: the breaker's test
// calls while it is on; a person, once the breaker was turned off (nothing
// tests the provider then) or the service left the configuration.
func TestAnAutomaticPauseSaysWhetherAnythingTestsTheProvider(t *testing.T) {
	cases := []struct {
		name      string
		breakers  map[string]config.Breaker
		says, not string
	}{
		{"breaker on", map[string]config.Breaker{"crm": config.DefaultBreaker},
			"A test call goes every 30 seconds and resumes the service when the provider answers.", "nothing tests"},
		{"breaker off since", map[string]config.Breaker{"crm": {Off: true}},
			"Its breaker has been turned off since, so nothing tests crm: resume it by hand on Services once the provider answers again.", "test call goes"},
		{"service no longer configured", map[string]config.Breaker{"erp": config.DefaultBreaker},
			"crm is no longer configured, so nothing tests it: resume it on Services to lift the pause.", "test call goes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
				b := setup(t, db, config.Alerts{})
				b.a.SetBreakers(c.breakers)
				_, _, err := models.Pause(db, models.ServicePause{Service: "crm", PausedBy: models.AutomaticPauser, PausedAt: b.clock.Now(),
					Reason: "paused automatically: 20 calls in a row answered 503"})
				require.NoError(t, err)
				b.clock.Advance(11 * time.Minute)
				b.step(t)
				msgs := b.rec.messages()
				require.Len(t, msgs, 1)
				require.Contains(t, msgs[0].Text, "syncdesk paused crm by itself (paused automatically: 20 calls in a row answered 503).")
				require.Contains(t, msgs[0].Text, c.says)
				require.NotContains(t, msgs[0].Text, c.not)
			})
		})
	}
}

// An incident that resolves keeps what its end said, as its resolved
// notification says it, beside the words it had while open.
func TestAResolvedIncidentKeepsWhatItsEndSaid(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db, config.Alerts{})
		openPause(t, b)
		require.NoError(t, b.a.Deliver(context.Background()))
		b.clock.Advance(time.Minute)
		_, err := models.Resume(db, "crm")
		require.NoError(t, err)
		b.step(t)
		msgs := b.rec.messages()
		require.Len(t, msgs, 2)
		require.Equal(t, notify.Resolved, msgs[1].State)
		inc, err := models.IncidentByID(db, msgs[1].Incident)
		require.NoError(t, err)
		require.Equal(t, "This cleared at 2026-12-01 09:01 UTC, 1 minute after it began. Nothing more to do for it.", inc.ResolvedText)
		require.Equal(t, msgs[1].Text, inc.ResolvedText, "as the resolved notification said it")
		require.Contains(t, inc.Text, "Resume it on Services", "the words it had while open stay")
	})
}
