package migrations_test

import (
	"errors"
	"sync"
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
			"external_map", "attempts", "in_progress", "processed_events", "reconciliation_runs", "discrepancies",
			"remote_deleted_objects"} {
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

// Instances starting together on an empty Postgres each migrate: every one
// of them must succeed, and each file must be applied once. Ten at once on a
// fresh schema, twenty times over.
func TestConcurrentStartsOnAnEmptyPostgres(t *testing.T) {
	const rounds, instances = 20, 10
	latest, err := migrations.Latest(models.Postgres)
	require.NoError(t, err)
	for round := range rounds {
		dsn := dbtest.PostgresURL(t)
		applied := make([]int, instances)
		errs := make([]error, instances)
		var wg sync.WaitGroup
		for i := range instances {
			wg.Add(1)
			go func() {
				defer wg.Done()
				db, err := models.Open(dsn)
				if err != nil {
					errs[i] = err
					return
				}
				defer models.Close(db)
				applied[i], errs[i] = migrations.Apply(db)
			}()
		}
		wg.Wait()
		total := 0
		for i := range instances {
			require.NoError(t, errs[i], "round %d, instance %d", round, i)
			total += applied[i]
		}
		require.Equal(t, latest, total, "round %d: every migration applied exactly once across the instances", round)
	}
}

// The migration lock is the schema's: while one schema's lock is held, a
// migration of another schema on the same database goes ahead, and one of
// the same schema (a second instance) waits until the lock is let go.
func TestMigrationLockIsPerSchema(t *testing.T) {
	url := dbtest.PostgresURL(t)
	tx := dbtest.Open(t, url).Begin()
	require.NoError(t, tx.Error)
	defer tx.Rollback()
	require.NoError(t, migrations.Lock(tx))

	other := applyInBackground(t, dbtest.PostgresURL(t))
	select {
	case err := <-other:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		tx.Rollback()
		t.Fatal("a migration of another schema waited for this schema's lock")
	}

	same := applyInBackground(t, url)
	select {
	case err := <-same:
		t.Fatalf("a second instance migrated the schema while its lock was held (err %v)", err)
	case <-time.After(500 * time.Millisecond):
	}
	require.NoError(t, tx.Rollback().Error)
	select {
	case err := <-same:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the second instance still waits after the lock was let go")
	}
}

// applyInBackground migrates the database at a --db value on a handle of
// its own, as another instance would, and sends Apply's error when done.
func applyInBackground(t *testing.T, v string) <-chan error {
	db, err := models.Open(v)
	require.NoError(t, err)
	t.Cleanup(func() { _ = models.Close(db) })
	done := make(chan error, 1)
	go func() { _, err := migrations.Apply(db); done <- err }()
	return done
}
