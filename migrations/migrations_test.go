package migrations_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/migrations"
	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

func TestApplyIsIdempotent(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		// dbtest already applied everything once: a second run applies nothing.
		n, err := migrations.Apply(db)
		require.NoError(t, err)
		require.Zero(t, n, "re-applying migrations must be a no-op")

		v, current, err := migrations.Current(db)
		require.NoError(t, err)
		latest, _ := migrations.Latest(models.Dialect(db))
		require.Equal(t, latest, v)
		require.True(t, current)

		for _, table := range []string{"users", "sessions", "api_tokens", "audit_entries", "records",
			"external_map", "attempts", "in_progress", "processed_events", "reconciliation_runs", "discrepancies"} {
			require.True(t, db.Migrator().HasTable(table), "table %s missing", table)
		}
	})
}

func TestApplyToEmptyDatabaseAppliesEveryFile(t *testing.T) {
	for _, dialect := range []string{models.SQLite, models.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			var dsn string
			if dialect == models.SQLite {
				dsn = "sqlite:" + t.TempDir() + "/empty.db"
			} else {
				dsn = dbtest.PostgresURL(t)
			}
			db, err := models.Open(dsn)
			require.NoError(t, err)
			defer models.Close(db)
			latest, err := migrations.Latest(dialect)
			require.NoError(t, err)
			n, err := migrations.Apply(db)
			require.NoError(t, err)
			require.Equal(t, latest, n)
		})
	}
}

func TestNewerDatabaseIsRefused(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		require.NoError(t, db.Exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future.sql', 'x')").Error)
		_, err := migrations.Apply(db)
		require.ErrorIs(t, err, migrations.ErrTooNew)
		require.Contains(t, err.Error(), "version 999")
		_, current, err := migrations.Current(db)
		require.ErrorIs(t, err, migrations.ErrTooNew)
		require.False(t, current)
	})
}

// The invariants' keys are enforced by the database itself, not by code.
func TestUniqueKeysAreEnforcedByTheDatabase(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Now().UTC()
		link := func() *models.Link {
			return &models.Link{LocalType: "order", LocalID: "1", ExternalService: "crm", ExternalKey: "site_order_1",
				Status: models.StatusNew, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now}
		}
		require.NoError(t, db.Create(link()).Error)
		err := db.Create(link()).Error
		require.True(t, errors.Is(err, gorm.ErrDuplicatedKey), "second link for one key: want a duplicate-key error, got %v", err)

		other := link()
		other.ExternalService = "payments"
		require.NoError(t, db.Create(other).Error, "the same record in another service is a different link")

		ev := func() *models.ProcessedEvent {
			return &models.ProcessedEvent{Provider: "payments", EventID: "evt_1", ReceivedAt: now, Outcome: "applied"}
		}
		require.NoError(t, db.Create(ev()).Error)
		err = db.Create(ev()).Error
		require.True(t, errors.Is(err, gorm.ErrDuplicatedKey), "second processed event: want a duplicate-key error, got %v", err)

		ip := func(holder string) *models.InProgress {
			return &models.InProgress{ExternalService: "crm", LocalType: "order", LocalID: "1", Holder: holder,
				StartedAt: now, ExpiresAt: now.Add(time.Minute)}
		}
		require.NoError(t, db.Create(ip("a")).Error)
		err = db.Create(ip("b")).Error
		require.True(t, errors.Is(err, gorm.ErrDuplicatedKey), "second in-progress row: want a duplicate-key error, got %v", err)

		var n int64
		require.NoError(t, db.Model(&models.InProgress{}).Count(&n).Error)
		require.EqualValues(t, 1, n)
	})
}
