package inbox

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// On Postgres a delivery holds its events' rows until it commits, in its
// list's order; a write of the counts that waited for them in another
// order could deadlock with it, so it leaves them for the next write.
func TestWritingTheCountsSkipsAnEventADeliveryHolds(t *testing.T) {
	db := dbtest.Postgres(t)
	e := setup(t, db)
	body := paymentEvent("evt_held", "payment.unheard_of", "1")
	for range 3 {
		_, err := e.deliver("payments", body)
		require.NoError(t, err)
	}
	tx := db.Begin()
	defer tx.Rollback()
	require.NoError(t, tx.Exec("UPDATE processed_events SET duplicates = duplicates + 10 WHERE event_id = ?", "evt_held").Error)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	require.NoError(t, e.rc.Flush(ctx), "the write does not wait for the held row")
	require.NoError(t, tx.Rollback().Error)

	require.NoError(t, e.rc.Flush(context.Background()))
	ev, err := models.EventByID(db, "payments", "evt_held")
	require.NoError(t, err)
	require.Equal(t, 2, ev.Duplicates, "kept, and written once the row was free")
}
