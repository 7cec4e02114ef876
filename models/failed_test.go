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
		"external_map_failed_updated_idx":  func(dry *gorm.DB) { _, _ = models.NewestFailures(dry, 8) },
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
