package outbox

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models/dbtest"
)

// The claim-lag histogram says how late links are sent after they fall due:
// a link due 7 s before its claim is one sample of about 7 s.
func TestClaimLagIsObservedAtEachClaim(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		reg := prometheus.NewRegistry()
		eng := e.engine(db, Options{Concurrency: 2, Registry: reg})
		e.upsert(order(1))
		e.clock.Advance(7 * time.Second)
		require.NoError(t, eng.Drain(context.Background()))

		families, err := reg.Gather()
		require.NoError(t, err)
		for _, f := range families {
			if f.GetName() != "syncdesk_claim_lag_seconds" {
				continue
			}
			h := f.GetMetric()[0].GetHistogram()
			require.Equal(t, uint64(1), h.GetSampleCount(), "one claimed link, one sample")
			require.InDelta(t, 7.0, h.GetSampleSum(), 0.5, "the link waited 7 s past its due time")
			return
		}
		t.Fatal("syncdesk_claim_lag_seconds is not registered")
	})
}
