package outbox

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/clock"
)

// DatabaseClock is the clock engines sharing a database must run on: the
// database's, told as local's time plus the offset measured between them
// (clock.Anchored; Measure it again now and then). A lease, an in-progress
// row and a rescue compare times written by one instance with another's
// clock: on each machine's own clock, an instance running ahead by more
// than a lease would rescue every live lease — and the link would be sent
// twice — and one running behind would take leases that the others see as
// expired already.
func DatabaseClock(ctx context.Context, db *gorm.DB, local clock.Clock) (*clock.Anchored, error) {
	clk, err := clock.Anchor(ctx, local, func(ctx context.Context) (time.Time, error) {
		return models.DatabaseNow(db.WithContext(ctx))
	})
	if err != nil {
		return nil, fmt.Errorf("measure this machine's clock against the database's: %w", err)
	}
	return clk, nil
}
