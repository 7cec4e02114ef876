package models_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// The queries over failed links read the partial indexes on them: on
// SQLite the planner would otherwise sort every failed link by itself.
func TestFailedQueriesUseThePartialIndexes(t *testing.T) {
	db := dbtest.SQLite(t)
	// Capture each query's SQL in a dry run, then ask SQLite for its plan.
	var sql string
	var vars []any
	capture := func(tx *gorm.DB) {
		if sql == "" {
			sql, vars = tx.Statement.SQL.String(), tx.Statement.Vars
		}
	}
	require.NoError(t, db.Callback().Query().After("gorm:query").Register("test:capture", capture))
	require.NoError(t, db.Callback().Row().After("gorm:row").Register("test:capture", capture)) // Scan
	plan := func(f func(dry *gorm.DB)) string {
		sql, vars = "", nil
		f(db.Session(&gorm.Session{DryRun: true}))
		require.NotEmpty(t, sql)
		var rows []struct{ Detail string }
		require.NoError(t, db.Raw("EXPLAIN QUERY PLAN "+sql, vars...).Scan(&rows).Error)
		var b strings.Builder
		for _, r := range rows {
			fmt.Fprintln(&b, r.Detail)
		}
		return b.String()
	}
	for index, f := range map[string]func(dry *gorm.DB){
		"external_map_failed_at_idx":       func(dry *gorm.DB) { _, _ = models.NewestFailures(dry, 8) },
		"external_map_failed_group_id_idx": func(dry *gorm.DB) { _, _ = models.FailedIDs(dry, "crm · HTTP 422 · …", false, 200) },
		"external_map_aside_group_id_idx":  func(dry *gorm.DB) { _, _ = models.FailedIDs(dry, "crm · HTTP 422 · …", true, 200) },
	} {
		p := plan(f)
		require.Contains(t, p, index, p)
		require.NotContains(t, p, "TEMP B-TREE", "a sort of every failed link: %s", p)
	}
	p := plan(func(dry *gorm.DB) { _ = models.RefreshFailedGroups(dry, time.Now()) })
	require.Contains(t, p, "external_map_failed_group_id_idx", p)
}

// Newest failures go by when each link failed, not by its last write: a
// webhook about a failed link's object (which writes the link and leaves
// it failed) does not bring the link to the top as just failed. Each way
// into failed sets the time: a link stored failed, one an operator marks
// failed, one that fails again after a retry.
func TestNewestFailuresGoByWhenEachLinkFailed(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		at := func(minutes int) time.Time { return effectsNow.Add(time.Duration(minutes) * time.Minute) }
		// stored: failed an hour before effectsNow, as effectLink stores it.
		stored := effectLink(t, db, "1", "crm", models.StatusFailed)
		marked := effectLink(t, db, "2", "crm", models.StatusRetry)
		_, err := models.MarkFailed(db, marked.ID, "ada@example.com", "bad address", at(10))
		require.NoError(t, err)
		again := effectLink(t, db, "3", "crm", models.StatusFailed)
		require.NoError(t, db.Model(&models.Link{}).Where("id = ?", again.ID).Updates(map[string]any{"status": models.StatusRetry, "updated_at": at(5)}).Error)
		require.NoError(t, db.Model(&models.Link{}).Where("id = ?", again.ID).Updates(map[string]any{"status": models.StatusFailed, "updated_at": at(20)}).Error)

		// The webhook's write, after all of them.
		require.NoError(t, models.AdoptProviderState(db, &stored, stored.ExternalID, "h-held", "h-record", at(30)))
		got, err := models.NewestFailures(db, 8)
		require.NoError(t, err)
		var order []string
		for _, l := range got {
			order = append(order, l.LocalID)
		}
		require.Equal(t, []string{"3", "2", "1"}, order, "newest failure first")
		want := map[string]time.Time{"1": effectsBefore, "2": at(10), "3": at(20)}
		for _, l := range got {
			require.NotNil(t, l.FailedAt, "order/%s", l.LocalID)
			require.True(t, want[l.LocalID].Equal(*l.FailedAt), "order/%s failed at %s, want %s", l.LocalID, l.FailedAt, want[l.LocalID])
		}
		require.True(t, got[2].UpdatedAt.Equal(at(30)), "the webhook's write is still the link's last change")
	})
}

// On Postgres a webhook's note of what the provider holds, on a synced
// link, changes no indexed column any more (Newest failures reads failed_at,
// not updated_at): it is a HOT update, which writes none of the table's
// sixteen indexes.
func TestAWebhookNoteOnASyncedLinkIsAHOTUpdate(t *testing.T) {
	db := dbtest.Postgres(t)
	l := effectLink(t, db, "1", "crm", models.StatusSuccess)
	tx := db.Begin()
	defer tx.Rollback()
	require.NoError(t, models.AdoptProviderState(tx, &l, l.ExternalID, "h-held", "h-record", effectsNow))
	var updated, hot int64
	require.NoError(t, tx.Raw(`SELECT pg_stat_get_xact_tuples_updated('external_map'::regclass),
		pg_stat_get_xact_tuples_hot_updated('external_map'::regclass)`).Row().Scan(&updated, &hot))
	require.EqualValues(t, 1, updated)
	require.EqualValues(t, 1, hot, "the link's update wrote its indexes")
}
