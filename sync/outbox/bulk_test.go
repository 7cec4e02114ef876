package outbox

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/sandbox"
)

func incoming(typ, id, payload string) Incoming {
	return Incoming{Type: typ, ID: id, Payload: []byte(payload)}
}

// reasons returns each result's refusal in words, "" for a record taken.
func reasons(res []Applied) []string {
	out := make([]string, len(res))
	for i, r := range res {
		if r.Refused != nil {
			out[i] = r.Refused.Error()
		}
	}
	return out
}

func TestUpsertBatchAnswersPerRecordInOrder(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.upsert(order(2)) // already stored, same payload: unchanged
		batch := []Incoming{
			incoming(order(1)),
			incoming(order(2)),
			incoming("invoice", "1", `{}`),
			incoming("order", "", `{}`),
			incoming("order", strings.Repeat("9", 129), `{}`),
			incoming("order", "3", `[1]`),
			incoming("order", "4", `{"x":"`+strings.Repeat("a", models.MaxPayload)+`"}`),
			incoming(payment(5)),
			incoming("order", "1", `{"title":"again"}`),
		}
		res, err := e.eng.UpsertBatch(context.Background(), batch)
		require.NoError(t, err)
		require.Len(t, res, len(batch))
		require.Equal(t, []string{"", "", `no service is configured for records of type "invoice"`,
			"the id must be 1 to 128 characters without spaces, slashes or control characters",
			"the id must be 1 to 128 characters without spaces, slashes or control characters",
			"the payload must be a JSON object",
			fmt.Sprintf("the payload is %d bytes; the limit is %d", len(batch[6].Payload), models.MaxPayload),
			"", "the same type and id came earlier in this batch, as record 1"}, reasons(res))
		changed := make([]bool, len(res))
		for i, r := range res {
			changed[i] = r.Changed
		}
		require.Equal(t, []bool{true, false, false, false, false, false, false, true, false}, changed)
		for _, r := range res {
			if r.Refused != nil {
				require.IsType(t, &models.InvalidError{}, r.Refused, "a refusal is the request's fault, in words")
			}
		}

		var records, links int64
		require.NoError(t, db.Model(&models.Record{}).Count(&records).Error)
		require.NoError(t, db.Model(&models.Link{}).Count(&links).Error)
		require.EqualValues(t, 3, records, "orders 1 and 2, payment 5")
		require.EqualValues(t, 3, links, "one link per record to its one service")
		rec, err := models.RecordByKey(db, "order", "1")
		require.NoError(t, err)
		require.Equal(t, `{"title":"Order 1","total":"11.00"}`, rec.Payload, "the first of two records with one key is the one stored")
		require.Equal(t, "payments", e.link("payment", "5", "payments").ExternalService)

		again, err := e.eng.UpsertBatch(context.Background(), batch)
		require.NoError(t, err)
		require.Equal(t, reasons(res), reasons(again), "a replay is refused the same way")
		for i, r := range again {
			require.False(t, r.Changed, "record %d: the same batch again changes nothing", i+1)
		}
	})
}

// statements counts the statements a GORM handle runs (BEGIN and COMMIT
// are not statements GORM traces).
type statements struct {
	logger.Interface
	n atomic.Int64
}

func (s *statements) Trace(context.Context, time.Time, func() (string, int64), error) { s.n.Add(1) }

// A batch of 1,000 new records costs three statements whatever its size,
// and its replay two: the stored records' read (which an update needs, to
// note which fields it changes), the records' upsert, which tells what
// changed, and links, written only for those.
func TestUpsertBatchCostsThreeStatements(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		count := &statements{Interface: logger.Discard}
		eng := e.engine(db.Session(&gorm.Session{Logger: count}), Options{})
		batch := make([]Incoming, MaxBatch)
		for i := range batch {
			batch[i] = incoming(order(i + 1))
		}
		_, err := eng.UpsertBatch(context.Background(), batch)
		require.NoError(t, err)
		require.EqualValues(t, 3, count.n.Load(), "the records read, written, then links")
		var links int64
		require.NoError(t, db.Model(&models.Link{}).Where("status = ?", models.StatusNew).Count(&links).Error)
		require.EqualValues(t, MaxBatch, links)

		count.n.Store(0)
		res, err := eng.UpsertBatch(context.Background(), batch)
		require.NoError(t, err)
		require.EqualValues(t, 2, count.n.Load(), "a replay writes no links")
		for _, r := range res {
			require.False(t, r.Changed)
		}
	})
}

func TestUpsertBatchOverTheLimitIsRefusedWhole(t *testing.T) {
	t.Parallel()
	e := setup(t, dbtest.SQLite(t))
	batch := make([]Incoming, MaxBatch+1)
	for i := range batch {
		batch[i] = incoming(order(i + 1))
	}
	_, err := e.eng.UpsertBatch(context.Background(), batch)
	require.ErrorContains(t, err, "a batch holds at most 1000 records; this one holds 1001")
	var n int64
	require.NoError(t, e.db.Model(&models.Record{}).Count(&n).Error)
	require.Zero(t, n)
}

// A database failure on the batch's last statement (its links) rolls back
// its records too: a record is never stored without its links, and a batch
// is never half written.
func TestUpsertBatchDatabaseFailureWritesNothing(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		var fail atomic.Bool
		fail.Store(true)
		require.NoError(t, db.Callback().Create().Before("gorm:create").Register("test:links_fail", func(tx *gorm.DB) {
			if tx.Statement.Table == "external_map" && fail.Load() {
				_ = tx.AddError(&pgconn.PgError{Code: "53300", Message: "sorry, too many clients already"})
			}
		}))
		batch := []Incoming{incoming(order(1)), incoming(order(2)), incoming("order", "", `{}`)}
		_, err := e.eng.UpsertBatch(context.Background(), batch)
		require.ErrorIs(t, err, models.ErrUnavailable)
		var records, links int64
		require.NoError(t, db.Model(&models.Record{}).Count(&records).Error)
		require.NoError(t, db.Model(&models.Link{}).Count(&links).Error)
		require.Zero(t, records+links, "nothing of the batch is written")

		fail.Store(false)
		res, err := e.eng.UpsertBatch(context.Background(), batch)
		require.NoError(t, err)
		require.True(t, res[0].Changed && res[1].Changed, "sent again once the database is back, the batch is new")
	})
}

// Dozens of goroutines send batches whose keys overlap, to an engine that
// routes orders to two services: every key ends as one record with one link
// per service, holding one of the payloads sent for it, and every key sent
// is there.
func TestUpsertBatchConcurrentOverlappingBatches(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		crm2 := httptest.NewServer(sandbox.NewCRM(sandbox.Options{}))
		t.Cleanup(crm2.Close)
		svcs := append([]Service{}, e.svcs...)
		svc := crmConfig(crm2.URL)
		svcs = append(svcs, Service{Name: "crm2", Config: svc, Conn: connector.NewHTTP("crm2", svc, e.redactr, nil)})
		eng := New(db, svcs, e.clock, e.eng.log, Options{})

		const workers, batches, size, keys = 32, 4, 60, 300
		var wg sync.WaitGroup
		changed := make([]atomic.Int64, keys)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for b := range batches {
					batch := make([]Incoming, size)
					for i := range batch {
						k := (w*37 + b*size + i*7) % keys // overlapping, in a different order per worker
						batch[i] = incoming("order", fmt.Sprint(k), fmt.Sprintf(`{"title":"Order %d","by":%d}`, k, w%3))
					}
					res, err := eng.UpsertBatch(context.Background(), batch)
					if !assert.NoError(t, err) {
						return
					}
					for i, r := range res {
						assert.NoError(t, r.Refused)
						if r.Changed {
							changed[(w*37+b*size+i*7)%keys].Add(1)
						}
					}
				}
			}()
		}
		wg.Wait()

		var records []models.Record
		require.NoError(t, db.Find(&records).Error)
		require.Len(t, records, keys, "one record per key, none lost")
		for _, r := range records {
			require.Regexp(t, `^\{"by":[0-2],"title":"Order `+r.LocalID+`"\}$`, r.Payload)
		}
		type perRecord struct {
			LocalID  string
			Links    int
			Services int
		}
		var counts []perRecord
		require.NoError(t, db.Model(&models.Link{}).Select("local_id, COUNT(*) AS links, COUNT(DISTINCT external_service) AS services").
			Group("local_id").Scan(&counts).Error)
		require.Len(t, counts, keys, "every record has links")
		for _, c := range counts {
			require.Equal(t, perRecord{c.LocalID, 2, 2}, c, "one link per (record, service)")
		}
		for k := range changed {
			require.Positive(t, changed[k].Load(), "key %d was stored by some batch", k)
		}
	})
}
