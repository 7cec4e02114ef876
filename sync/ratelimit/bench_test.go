package ratelimit

import (
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/config"
)

// BenchmarkWait measures what a request pays the limiter: with no limit
// known (the fast path, no database), and with a rate that takes a turn
// from the shared row each time, 64 senders at once as in the outbox.
func BenchmarkWait(b *testing.B) {
	ok := answer(http.StatusOK)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, bc := range []struct {
		name    string
		dialect string
		cfg     config.RateLimit
	}{
		{"no limit", models.SQLite, config.RateLimit{}},
		{"shared turn/sqlite", models.SQLite, config.RateLimit{PerSecond: 10000, Burst: 10000}},
		{"shared turn/postgres", models.Postgres, config.RateLimit{PerSecond: 10000, Burst: 10000}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			db := instances(b, bc.dialect, 1)[0]
			l := New(db, "crm", bc.cfg, Options{Logger: quiet})
			done, err := l.Wait(b.Context())
			if err != nil {
				b.Fatal(err)
			}
			done(ok)
			b.SetParallelism(32) // 64 senders on two cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					done, err := l.Wait(b.Context())
					if err != nil {
						b.Error(err)
						return
					}
					done(ok)
				}
			})
		})
	}
}
