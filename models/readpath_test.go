package models_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/models/discrepancy"
)

// statements counts the SQL statements run through a session.
type statements struct {
	logger.Interface
	n atomic.Int64
}

func (s *statements) Trace(context.Context, time.Time, func() (string, int64), error) { s.n.Add(1) }

func counted(db *gorm.DB) (*gorm.DB, *statements) {
	s := &statements{Interface: logger.Discard}
	return db.Session(&gorm.Session{Logger: s}), s
}

// A page of runs is read in one list and one count, whatever its length
// (it was two queries more per run), and the counts are each run's own.
func TestRunDetailsCountsAPageInOneQuery(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		for i := range 51 {
			r := models.ReconciliationRun{Service: fmt.Sprint("svc", i%3), StartedAt: now, HeartbeatAt: &now}
			require.NoError(t, models.StartRun(db, &r))
			var fs []models.Finding
			for j := range i % 4 {
				fs = append(fs, models.Finding{RunID: r.ID, Kind: discrepancy.NeverSynced, Status: models.DiscrepancyFixed,
					LocalType: "order", LocalID: fmt.Sprint(j), CreatedAt: now})
			}
			if len(fs) > 0 {
				require.NoError(t, models.InsertFindings(db, fs))
			}
			require.NoError(t, models.FinishRun(db, r.ID, models.RunCompleted, "", now))
		}
		runs, err := models.ListRuns(db, models.RunFilter{Limit: 51})
		require.NoError(t, err)
		require.Len(t, runs, 51)

		cdb, n := counted(db)
		details, err := models.RunDetails(cdb, runs)
		require.NoError(t, err)
		require.EqualValues(t, 1, n.n.Load(), "one count for the page")
		for i, d := range details {
			want := int64((d.Run.ID - runs[len(runs)-1].ID) % 4)
			require.Equal(t, runs[i].ID, d.Run.ID, "in the order given")
			require.Equal(t, want, d.All.Fixed, "run %d", d.Run.ID)
			require.Len(t, d.Kinds, len(discrepancy.Kinds))
		}
	})
}

// ExistingRecords answers for a page of keys in one query, on both
// databases (a row-value IN).
func TestExistingRecordsIsOneQuery(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Now().UTC()
		for i := range 50 {
			_, err := models.UpsertRecord(db, "order", fmt.Sprint(i), `{"n":1}`, "hash", now)
			require.NoError(t, err)
		}
		var keys []models.RecordKey
		for i := range 100 {
			keys = append(keys, models.RecordKey{LocalType: "order", LocalID: fmt.Sprint(i)})
		}
		keys = append(keys, models.RecordKey{LocalType: "lead", LocalID: "1"})
		cdb, n := counted(db)
		have, err := models.ExistingRecords(cdb, keys)
		require.NoError(t, err)
		require.EqualValues(t, 1, n.n.Load())
		require.Len(t, have, 50)
		require.True(t, have[models.RecordKey{LocalType: "order", LocalID: "49"}])
		require.False(t, have[models.RecordKey{LocalType: "order", LocalID: "50"}])
		require.False(t, have[models.RecordKey{LocalType: "lead", LocalID: "1"}])

		none, err := models.ExistingRecords(cdb, nil)
		require.NoError(t, err)
		require.Empty(t, none)
		require.EqualValues(t, 1, n.n.Load(), "nothing to ask, no query")
	})
}

// AnyRecord tells an empty database (the demo seeds it) from one with records.
func TestAnyRecord(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		got, err := models.AnyRecord(db)
		require.NoError(t, err)
		require.False(t, got)
		_, err = models.UpsertRecord(db, "order", "1", `{"n":1}`, "hash", time.Now().UTC())
		require.NoError(t, err)
		got, err = models.AnyRecord(db)
		require.NoError(t, err)
		require.True(t, got)
	})
}
