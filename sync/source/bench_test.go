package source

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// BenchmarkSourceDrain measures a source draining an outbox table of
// 100,000 rows (SYNCDESK_BENCH_ROWS sets another count), each row a record
// of its own routed to one service, in batches of 1,000: rows/s from the
// first read to the cursor at the last row, for each business database
// (MariaDB, Postgres) × syncdesk's (SQLite, Postgres). Writing the rows is
// not timed. Run it with
//
//	SYNCDESK_TEST_POSTGRES=postgres://… SYNCDESK_TEST_MYSQL='root@tcp(127.0.0.1:3306)/test' \
//	  go test -run '^$' -bench SourceDrain -benchtime 1x ./sync/source/
func BenchmarkSourceDrain(b *testing.B) {
	rows := 100000
	if v, err := strconv.Atoi(os.Getenv("SYNCDESK_BENCH_ROWS")); err == nil && v > 0 {
		rows = v
	}
	for _, driver := range []string{"mysql", "postgres"} {
		for _, dialect := range []string{models.SQLite, models.Postgres} {
			b.Run("biz="+driver+"/db="+dialect, func(b *testing.B) {
				db := dbtest.SQLite(b)
				if dialect == models.Postgres {
					db = dbtest.Postgres(b)
				}
				benchDrain(b, newBiz(b, driver), db, rows)
			})
		}
	}
}

func benchDrain(b *testing.B, biz biz, db *gorm.DB, rows int) {
	b.StopTimer()
	biz.createOutbox(b)
	for start := 0; start < rows; start += 1000 {
		var q strings.Builder
		q.WriteString("INSERT INTO syncdesk_outbox (type, local_id, payload, op) VALUES ")
		for i := start; i < min(start+1000, rows); i++ {
			if i > start {
				q.WriteString(", ")
			}
			fmt.Fprintf(&q, `('item', '%d', '{"n": %d, "name": "item %d", "total": 12.5}', 'upsert')`, i, i, i)
		}
		if _, err := biz.db.Exec(q.String()); err != nil {
			b.Fatalf("write the outbox: %v", err)
		}
	}
	cfg := biz.outboxSource()
	cfg.BatchSize = 1000
	s := newWorld(b, db, nil).source(b, cfg)
	b.StartTimer()
	began := time.Now()
	for cursor(b, db).LastID < int64(rows) {
		if err := s.Drain(context.Background()); err != nil {
			b.Fatalf("drain: %v", err)
		}
	}
	took := time.Since(began)
	b.StopTimer()
	if c := cursor(b, db); c.RowsRead != int64(rows) || c.Refused != 0 {
		b.Fatalf("read %d rows, %d refused (%s); want %d", c.RowsRead, c.Refused, c.LastRefusal, rows)
	}
	b.ReportMetric(float64(rows)/took.Seconds(), "rows/s")
	b.ReportMetric(float64(took.Nanoseconds())/float64(rows), "ns/op")
}
