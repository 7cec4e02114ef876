package models_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
)

// openGated opens a SQLite file whose busy timeout is short (the first
// _busy_timeout in the DSN is the one the driver reads): a writer that
// waited in SQLite's busy handler would be refused after 50 ms.
func openGated(t *testing.T) *gorm.DB {
	t.Helper()
	db, err := models.Open("sqlite:" + filepath.Join(t.TempDir(), "gate.db") + "?_busy_timeout=50")
	require.NoError(t, err)
	t.Cleanup(func() { _ = models.Close(db) })
	require.NoError(t, db.Exec("CREATE TABLE writes (writer INTEGER NOT NULL)").Error)
	return db
}

// Dozens of writers at once, each holding the write lock for a while, far
// longer in all than the busy timeout: each waits its turn in the process
// and none is refused "database is locked".
func TestSQLiteWritersQueueForTheWriteLockBeyondTheBusyTimeout(t *testing.T) {
	t.Parallel()
	db := openGated(t)
	const writers = 32
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = db.Transaction(func(tx *gorm.DB) error {
				if err := tx.Exec("INSERT INTO writes (writer) VALUES (?)", w).Error; err != nil {
					return err
				}
				time.Sleep(10 * time.Millisecond) // the lock held, as a batch's writes hold it
				return nil
			})
		}()
	}
	wg.Wait()
	for w, err := range errs {
		require.NoError(t, err, "writer %d", w)
	}
	var n int64
	require.NoError(t, db.Table("writes").Count(&n).Error)
	require.EqualValues(t, writers, n)
}

// A transaction whose context ends gives the turn back even when nothing
// rolls it back (database/sql does), and a writer whose context ends while
// it waits leaves the queue with its context's error.
func TestSQLiteWriteTurnIsGivenBackWhenAContextEnds(t *testing.T) {
	t.Parallel()
	db := openGated(t)
	ctx, cancel := context.WithCancel(context.Background())
	held := db.WithContext(ctx).Begin()
	require.NoError(t, held.Error)
	require.NoError(t, held.Exec("INSERT INTO writes (writer) VALUES (1)").Error)

	waiting, stopWaiting := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer stopWaiting()
	err := db.WithContext(waiting).Transaction(func(tx *gorm.DB) error { return nil })
	require.ErrorIs(t, err, context.DeadlineExceeded, "the turn is held: the second writer waits until its context ends")

	cancel() // the first transaction is abandoned, never committed nor rolled back by its owner
	require.Eventually(t, func() bool {
		return db.Transaction(func(tx *gorm.DB) error {
			return tx.Exec("INSERT INTO writes (writer) VALUES (2)").Error
		}) == nil
	}, 5*time.Second, 10*time.Millisecond)
	var writers []int
	require.NoError(t, db.Table("writes").Pluck("writer", &writers).Error)
	require.Equal(t, []int{2}, writers, "the abandoned transaction was rolled back")
}
