package seed_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/redact"
	"github.com/syncdesk/syncdesk/sync/seed"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

const (
	nLinks    = 2000
	nAttempts = 10000
)

func fill(t *testing.T, db *gorm.DB) {
	t.Helper()
	var last seed.Counts
	err := seed.Fill(context.Background(), db, seed.Options{Links: nLinks, Attempts: nAttempts, Now: now,
		Progress: func(c seed.Counts) { last = c }})
	require.NoError(t, err)
	require.Equal(t, nLinks, last.Links, "progress reports every link")
	require.Equal(t, nAttempts, last.Attempts, "progress reports every attempt")
}

func count(t *testing.T, db *gorm.DB, model any, where string, args ...any) int64 {
	t.Helper()
	var n int64
	q := db.Model(model)
	if where != "" {
		q = q.Where(where, args...)
	}
	require.NoError(t, q.Count(&n).Error)
	return n
}

func TestFillCountsAndShape(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		fill(t, db)
		require.EqualValues(t, nLinks, count(t, db, &models.Link{}, ""))
		require.EqualValues(t, nAttempts, count(t, db, &models.Attempt{}, ""))

		var orphans int64
		require.NoError(t, db.Raw(`SELECT COUNT(*) FROM attempts a LEFT JOIN external_map l ON l.id = a.link_id WHERE l.id IS NULL`).Scan(&orphans).Error)
		require.Zero(t, orphans, "every attempt belongs to a link")
		var unrecorded int64
		require.NoError(t, db.Raw(`SELECT COUNT(*) FROM external_map l LEFT JOIN records r
			ON r.local_type = l.local_type AND r.local_id = l.local_id WHERE r.id IS NULL`).Scan(&unrecorded).Error)
		require.Zero(t, unrecorded, "every link has its record")

		share := func(st models.Status) float64 {
			return float64(count(t, db, &models.Link{}, "status = ?", st)) / nLinks
		}
		require.InDelta(t, 0.85, share(models.StatusSuccess), 0.03, "success")
		require.InDelta(t, 0.05, share(models.StatusRetry), 0.02, "retry")
		require.InDelta(t, 0.07, share(models.StatusFailed), 0.02, "failed")
		require.Positive(t, count(t, db, &models.Link{}, "status IN ?", []models.Status{models.StatusNew, models.StatusProcessing}))
		require.Positive(t, count(t, db, &models.Link{}, "needs_lookup = ?", true))
		require.Zero(t, count(t, db, &models.Link{}, "status = ? AND next_attempt_at <= ?", models.StatusRetry, now),
			"a retry is scheduled in the future")
		require.Zero(t, count(t, db, &models.Attempt{}, "created_at < ? OR created_at > ?", now.Add(-48*time.Hour), now),
			"attempts lie in the last 48 hours")
		require.Positive(t, count(t, db, &models.Link{}, "external_service = ? AND external_id LIKE ? ESCAPE '\\'", "crm", "deal\\_%"))
		require.Positive(t, count(t, db, &models.Link{}, "external_key LIKE ? ESCAPE '\\'", "site\\_order\\_%"))
		checkFailures(t, db)
		checkCreateBodies(t, db)
		checkOutcomes(t, db)
		checkAggregates(t, db)
		checkRuns(t, db)
	})
}

// checkRuns: each service has one completed run whose counts match the
// discrepancies it holds, fixed and reported both present.
func checkRuns(t *testing.T, db *gorm.DB) {
	t.Helper()
	for _, svc := range seed.DefaultServices {
		run, err := models.LatestRun(db, svc)
		require.NoError(t, err, svc)
		require.Equal(t, models.RunCompleted, run.Status, svc)
		d, err := models.RunDetailByID(db, run.ID)
		require.NoError(t, err)
		require.Positive(t, d.All.Fixed, svc)
		require.Positive(t, d.All.Reported, svc)
		require.Equal(t, run.Fixed, d.All.Fixed, svc)
		require.Equal(t, count(t, db, &models.Link{}, "external_service = ?", svc), run.Scanned, svc)
	}
	require.Zero(t, count(t, db, &models.ReconciliationRun{}, "service NOT IN ?", seed.DefaultServices))
}

// checkFailures: every failed link carries its fingerprint, and the
// fingerprints make a handful of groups.
func checkFailures(t *testing.T, db *gorm.DB) {
	t.Helper()
	var failed []models.Link
	require.NoError(t, db.Where("status = ?", models.StatusFailed).Find(&failed).Error)
	groups := map[string]bool{}
	for _, l := range failed {
		require.NotEmpty(t, l.LastError, "link %d", l.ID)
		require.Equal(t, models.ErrorGroup(l.ExternalService, l.LastHTTPCode, l.LastError), l.ErrorGroup, "link %d", l.ID)
		groups[l.ErrorGroup] = true
	}
	require.GreaterOrEqual(t, len(groups), 5, "distinct causes")
	require.LessOrEqual(t, len(groups), 30, "a handful of causes per service, not one per link")
}

// checkCreateBodies: a link whose create is not known to have taken holds
// the create's body frozen as a claim freezes it, the record's payload as
// stored (the connector adds our key when it sends), so that a create sent
// again sends it and a success records its hash as the record's.
func checkCreateBodies(t *testing.T, db *gorm.DB) {
	t.Helper()
	var frozen, differ int64
	require.NoError(t, db.Raw(`SELECT COUNT(*) FROM external_map WHERE create_payload <> ''`).Scan(&frozen).Error)
	require.Positive(t, frozen, "some creates are frozen")
	require.NoError(t, db.Raw(`SELECT COUNT(*) FROM external_map l JOIN records r ON r.local_type = l.local_type
		AND r.local_id = l.local_id WHERE l.create_payload <> '' AND l.create_payload <> r.payload`).Scan(&differ).Error)
	require.Zero(t, differ, "frozen create bodies that are not their record's payload")

	// The request excerpts show the body the connector sends, the record's
	// payload with our key at its sorted place, masked as the connector's
	// excerpts are: no customer's email reaches the attempt log.
	var sent []struct{ Payload, ExternalKey, RequestExcerpt string }
	require.NoError(t, db.Raw(`SELECT r.payload, l.external_key, a.request_excerpt FROM attempts a
		JOIN external_map l ON l.id = a.link_id JOIN records r ON r.local_type = l.local_type AND r.local_id = l.local_id
		ORDER BY a.id LIMIT 200`).Scan(&sent).Error)
	require.NotEmpty(t, sent)
	emails := 0
	for _, a := range sent {
		body, err := connector.WithKey([]byte(a.Payload), "external_key", a.ExternalKey)
		require.NoError(t, err)
		_, got, _ := strings.Cut(a.RequestExcerpt, "\n\n")
		require.Equal(t, string(redact.New(nil).JSONPrefix(body, len(body))), got, "the request's body, as the connector logs it")
		if strings.Contains(a.Payload, "@example.com") {
			emails++
			require.NotContains(t, a.RequestExcerpt, "@example.com")
		}
	}
	require.Positive(t, emails, "some payloads carry a customer's email")
}

// checkOutcomes: a link's last attempt agrees with its status.
func checkOutcomes(t *testing.T, db *gorm.DB) {
	t.Helper()
	var rows []struct {
		Status  models.Status
		Outcome models.Outcome
		N       int64
	}
	require.NoError(t, db.Raw(`SELECT l.status, a.outcome, COUNT(*) AS n FROM external_map l
		JOIN attempts a ON a.id = (SELECT MAX(id) FROM attempts WHERE link_id = l.id)
		GROUP BY l.status, a.outcome`).Scan(&rows).Error)
	require.NotEmpty(t, rows)
	for _, r := range rows {
		switch r.Status {
		case models.StatusSuccess, models.StatusNew, models.StatusProcessing:
			require.Equal(t, models.OutcomeOK, r.Outcome, "a %s link's last attempt", r.Status)
		case models.StatusRetry:
			require.Contains(t, []models.Outcome{models.OutcomeTemporary, models.OutcomeAmbiguous}, r.Outcome, "a retry's last attempt")
		case models.StatusFailed:
			require.Contains(t, []models.Outcome{models.OutcomePermanent, models.OutcomeTemporary}, r.Outcome, "a failure's last attempt")
		}
	}
	var a models.Attempt
	require.NoError(t, db.Where("outcome = ?", models.OutcomeOK).Take(&a).Error)
	require.Greater(t, len(a.RequestExcerpt), 200, "request excerpts are a few hundred bytes")
	require.Greater(t, len(a.ResponseExcerpt), 100, "response excerpts too")
}

// checkAggregates: the overview's counts were refreshed.
func checkAggregates(t *testing.T, db *gorm.DB) {
	t.Helper()
	counts, err := models.LinkCounts(db)
	require.NoError(t, err)
	var total int64
	for _, c := range counts {
		total += c.N
	}
	require.EqualValues(t, nLinks, total, "stat_link_counts")
	since := now.Truncate(time.Hour).Add(-23 * time.Hour)
	hours, err := models.AttemptHours(db, since)
	require.NoError(t, err)
	var inChart int64
	for _, h := range hours {
		inChart += h.N
	}
	require.Equal(t, count(t, db, &models.Attempt{}, "created_at >= ?", since), inChart, "stat_attempt_hours")
}

func TestFillPagesQueries(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		fill(t, db)
		first, err := models.SearchLinks(db, models.LinkQuery{Limit: 50})
		require.NoError(t, err)
		require.Len(t, first, 50)
		require.EqualValues(t, nLinks, first[0].ID, "newest first")
		deep, err := models.SearchLinks(db, models.LinkQuery{BeforeID: 200, Limit: 50})
		require.NoError(t, err)
		require.Len(t, deep, 50)
		require.EqualValues(t, 199, deep[0].ID)

		found, err := models.SearchLinks(db, models.LinkQuery{Search: first[0].ExternalKey})
		require.NoError(t, err)
		require.NotEmpty(t, found, "search by external key")
		var crm models.Link
		require.NoError(t, db.Where("external_service = ? AND external_id <> ''", "crm").Take(&crm).Error)
		found, err = models.SearchLinks(db, models.LinkQuery{Search: crm.ExternalID})
		require.NoError(t, err)
		require.Len(t, found, 1, "search by external id %s", crm.ExternalID)

		groups, err := models.FailedGroups(db, false, 100)
		require.NoError(t, err)
		var inGroups int64
		for _, g := range groups {
			inGroups += g.N
		}
		require.Equal(t, count(t, db, &models.Link{}, "status = ?", models.StatusFailed), inGroups)
		attempts, err := models.LinkAttempts(db, crm.ID)
		require.NoError(t, err)
		for _, a := range attempts {
			require.Equal(t, crm.ID, a.LinkID)
		}
	})
}

func TestFillRefusesADatabaseWithLinks(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	require.NoError(t, seed.Fill(context.Background(), db, seed.Options{Links: 10, Attempts: 30, Now: now}))
	err := seed.Fill(context.Background(), db, seed.Options{Links: 10, Attempts: 30, Now: now})
	require.ErrorIs(t, err, seed.ErrNotEmpty)
	require.EqualValues(t, 10, count(t, db, &models.Link{}, ""), "nothing was added")
}

func TestFillIdsContinueAfterSeeding(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		require.NoError(t, seed.Fill(context.Background(), db, seed.Options{Links: 30, Attempts: 90, Now: now}))
		l := models.Link{LocalType: "order", LocalID: "new-1", ExternalService: "crm", ExternalKey: "site_order_new-1",
			Status: models.StatusNew, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now}
		require.NoError(t, db.Create(&l).Error, "the id sequence is past the seeded ids")
		require.EqualValues(t, 31, l.ID)
	})
}

// schema lists the database's indexes and constraints with their definitions.
func schema(t *testing.T, db *gorm.DB) []string {
	t.Helper()
	q := `SELECT name || ': ' || sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name`
	if models.Dialect(db) == models.Postgres {
		q = `SELECT indexname || ': ' || indexdef FROM pg_indexes WHERE schemaname = current_schema()
			UNION ALL SELECT conname || ': ' || pg_get_constraintdef(oid) FROM pg_constraint WHERE connamespace = current_schema()::regnamespace
			ORDER BY 1`
	}
	var out []string
	require.NoError(t, db.Raw(q).Scan(&out).Error)
	return out
}

func TestFillPutsBackIndexesAndForeignKeys(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		before := schema(t, db)
		require.NotEmpty(t, before)
		fill(t, db)
		require.Equal(t, before, schema(t, db), "the indexes and constraints the migrations made")
		err := db.Create(&models.Attempt{LinkID: nLinks + 100, Number: 1, Operation: "deal.create", Outcome: models.OutcomeOK, CreatedAt: now}).Error
		require.Error(t, err, "an attempt of a missing link is refused")
	})
}
