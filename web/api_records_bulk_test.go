package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// recordsAnswer is the answer to POST /api/v1/records.
type recordsAnswer struct {
	Records, Changed, Unchanged, Refused int
	Results                              []struct{ Type, ID, Result, Reason string }
	Error                                string
}

// postBatch sends a batch with a content type and reads the answer.
func (a *api) postBatch(contentType, body string) (int, recordsAnswer) {
	a.c.b.t.Helper()
	r := a.sendAs(contentType, "POST", "/api/v1/records", body)
	var out recordsAnswer
	require.NoError(a.c.b.t, json.Unmarshal([]byte(r.body), &out), "every API answer is JSON: %.200s", r.body)
	return r.status, out
}

func (b *bundle) count(model any) int64 {
	b.t.Helper()
	var n int64
	require.NoError(b.t, b.db.Model(model).Count(&n).Error)
	return n
}

// results lists each result as "result: reason".
func (out recordsAnswer) results() []string {
	var s []string
	for _, r := range out.Results {
		s = append(s, strings.TrimSuffix(r.Result+": "+r.Reason, ": "))
	}
	return s
}

const refusingBatch = `[
	{"type":"order","id":"1001","payload":{"title":"Order 1001"}},
	{"type":"invoice","id":"1","payload":{}},
	{"type":"order","id":"","payload":{}},
	{"type":"order","id":"1002","payload":[1]},
	{"type":"order","id":1003,"payload":{}},
	"order 1004",
	{"type":"order","id":"1001","payload":{"title":"twice"}},
	{"type":"order","id":"1005","payload":{"title":"Order 1005"}}
]`

func TestRecordsAPIBulkAnswersPerRecordAndSkipsTheRefused(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		a := b.api()
		code, out := a.postBatch("application/json", refusingBatch)
		require.Equal(t, http.StatusOK, code, out)
		require.Equal(t, []string{
			"changed",
			`refused: no service is configured for records of type "invoice"`,
			"refused: the id must be 1 to 128 characters without spaces, slashes or control characters",
			"refused: the payload must be a JSON object",
			"refused: the id must be a JSON string",
			`refused: a record must be a JSON object: {"type": …, "id": …, "payload": {…}}`,
			"refused: the same type and id came earlier in this batch, as record 1",
			"changed",
		}, out.results())
		require.Equal(t, [4]int{8, 2, 0, 6}, [4]int{out.Records, out.Changed, out.Unchanged, out.Refused})
		require.Equal(t, "1005", out.Results[7].ID, "results come in the order sent")
		require.EqualValues(t, 2, b.count(&models.Record{}), "the refused are skipped, the rest are stored")
		require.EqualValues(t, 2, b.count(&models.Link{}), "and queued")
		require.EqualValues(t, 1, b.auditCount("record.bulk_upsert", models.OutcomeSuccess), "one entry per batch")
		var entry models.AuditEntry
		require.NoError(t, db.Where("action = ?", "record.bulk_upsert").Take(&entry).Error)
		require.Equal(t, "8 records", entry.Target)
		require.Equal(t, "2 changed, 0 unchanged, 6 refused", entry.Detail)
	})
}

func TestRecordsAPIBulkReplayChangesNothing(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		a := b.api()
		var batch []string
		for i := range 50 {
			batch = append(batch, fmt.Sprintf(`{"type":"order","id":"%d","payload":{"title":"Order %d","total":"%d.00"}}`, i, i, i))
		}
		body := "[" + strings.Join(batch, ",") + "]"
		code, out := a.postBatch("application/json", body)
		require.Equal(t, http.StatusOK, code, out)
		require.Equal(t, 50, out.Changed)
		require.NoError(t, b.eng.Drain(context.Background()))
		sent := b.crm.Requests().Total
		require.Len(t, b.crm.Objects(), 50)

		code, out = a.postBatch("application/json; charset=utf-8", body)
		require.Equal(t, http.StatusOK, code, out)
		require.Equal(t, [3]int{0, 50, 0}, [3]int{out.Changed, out.Unchanged, out.Refused})
		var queued int64
		require.NoError(t, db.Model(&models.Link{}).Where("status <> ?", models.StatusSuccess).Count(&queued).Error)
		require.Zero(t, queued, "the same batch again queues nothing")
		require.NoError(t, b.eng.Drain(context.Background()))
		require.Equal(t, sent, b.crm.Requests().Total, "and sends nothing")
		require.EqualValues(t, 1, b.auditCount("record.bulk_upsert", models.OutcomeSuccess), "a replay is not audited")
	})
}

func TestRecordsAPIBulkTakesNDJSON(t *testing.T) {
	t.Parallel()
	b := setupSQLite(t)
	a := b.api()
	body := "{\"type\":\"order\",\"id\":\"1\",\"payload\":{\"title\":\"Order 1\"}}\n\n" +
		"{\"type\":\"order\",\"id\":\"2\",\"payload\":\"two\"}\r\n" +
		"{\"type\":\"order\",\"id\":\"3\",\"payload\":{\"title\":\"Order 3\"}}\n"
	code, out := a.postBatch("application/x-ndjson", body)
	require.Equal(t, http.StatusOK, code, out)
	require.Equal(t, []string{"changed", "refused: the payload must be a JSON object", "changed"}, out.results())
	require.EqualValues(t, 2, b.count(&models.Record{}))

	code, out = a.postBatch("application/x-ndjson", "{\"type\":\"order\",\"id\":\"4\",\"payload\":{}}\n\n{\"type\":\"order\",\"id\":\"5\",\"payload\":{}} {\"type\":\"order\"}\n")
	require.Equal(t, http.StatusBadRequest, code, out)
	require.Contains(t, out.Error, "line 3 is not valid JSON at column 40")
	require.EqualValues(t, 2, b.count(&models.Record{}), "a malformed line stores none of the batch")
}

func TestRecordsAPIBulkLimitsAndMalformedBodies(t *testing.T) {
	t.Parallel()
	b := setupSQLite(t)
	a := b.api()
	record := func(i int) string { return fmt.Sprintf(`{"type":"order","id":"%d","payload":{"n":%d}}`, i, i) }
	var many []string
	for i := range 1001 {
		many = append(many, record(i))
	}
	huge := `{"type":"order","id":"1","payload":{"x":"` + strings.Repeat("a", 17<<20) + `"}}`
	for _, tc := range []struct {
		name, contentType, body string
		code                    int
		words                   string
	}{
		{"1,001 records", "application/json", "[" + strings.Join(many, ",") + "]", 413,
			"a batch holds at most 1000 records; this one holds 1001"},
		{"1,001 lines", "application/x-ndjson", strings.Join(many, "\n"), 413, "at most 1000 records; this one holds more"},
		{"over 16 MiB", "application/json", "[" + huge + "]", 413, "larger than 16 MiB"},
		{"broken JSON", "application/json", "[\n" + record(1) + ",\n  {\"type\":\"order\",,}\n]", 400,
			"not valid JSON at line 3, column 19"},
		{"cut short", "application/json", "[" + record(1), 400, "unexpected end of JSON input"},
		{"an object", "application/json", record(1), 400, "must be a JSON array of records"},
		{"NDJSON sent as JSON", "application/json", record(1) + "\n" + record(2), 400,
			"line 2, column 1: invalid character '{' after top-level value; one record per line is sent with Content-Type application/x-ndjson"},
		{"empty", "application/json", "[]", 400, "holds no records"},
		{"a form", "application/x-www-form-urlencoded", "a=1", 415, "not application/x-www-form-urlencoded"},
	} {
		code, out := a.postBatch(tc.contentType, tc.body)
		require.Equal(t, tc.code, code, "%s: %s", tc.name, out.Error)
		require.Contains(t, out.Error, tc.words, tc.name)
	}
	require.Zero(t, b.count(&models.Record{}), "a batch refused whole writes nothing")
	require.Zero(t, b.auditCount("record.bulk_upsert", models.OutcomeSuccess))
}

// A database failure on the batch's links, after its records were written
// in the same transaction, answers 503 and leaves nothing of the batch.
func TestRecordsAPIBulkDatabaseFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		a := b.api()
		require.NoError(t, db.Callback().Create().Before("gorm:create").Register("test:links_fail", func(tx *gorm.DB) {
			if tx.Statement.Table == "external_map" {
				_ = tx.AddError(&pgconn.PgError{Code: "53300", Message: "sorry, too many clients already"})
			}
		}))
		a.auth.Set("Content-Type", "application/json")
		r := a.send("POST", "/api/v1/records", refusingBatch)
		requireJSONReason(t, r, "error", "too many connections")
		require.Zero(t, b.count(&models.Record{}), "no record of the batch is stored")
		require.Zero(t, b.count(&models.Link{}))
		require.Zero(t, b.auditCount("record.bulk_upsert", models.OutcomeSuccess))
	})
}

// Dozens of clients send batches with keys in common at once: each key
// ends as one record with one link, every key sent is there, and none of
// the batches fails (no deadlock, no unique-key error).
func TestRecordsAPIBulkConcurrentBatches(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		a := b.api()
		const clients, batches, size, keys = 24, 3, 80, 400
		var wg sync.WaitGroup
		for w := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := range batches {
					var recs []string
					for i := range size {
						k := (w*53 + n*size + i*3) % keys
						recs = append(recs, fmt.Sprintf(`{"type":"order","id":"%d","payload":{"title":"Order %d","v":%d}}`, k, k, w%4))
					}
					r := a.send("POST", "/api/v1/records", "["+strings.Join(recs, ",")+"]")
					if assert.Equal(t, http.StatusOK, r.status, r.body) {
						var out recordsAnswer
						assert.NoError(t, json.Unmarshal([]byte(r.body), &out))
						assert.Equal(t, size, out.Changed+out.Unchanged, "nothing refused")
					}
				}
			}()
		}
		wg.Wait()
		require.EqualValues(t, keys, b.count(&models.Record{}), "one record per key, none lost")
		var perRecord []int
		require.NoError(t, db.Model(&models.Link{}).Select("COUNT(*)").Group("local_type, local_id, external_service").
			Scan(&perRecord).Error)
		require.Len(t, perRecord, keys, "every record has its link")
		for _, n := range perRecord {
			require.Equal(t, 1, n, "one link per (record, service)")
		}
	})
}

// The acceptance: 10,000 records in 10 batches, 1% of them invalid
// (a bad id, an oversize payload, a payload that is not an object): exactly
// the valid ones are stored and queued, each invalid one is refused with
// its reason, and sending every batch again queues nothing.
func TestRecordsAPIBulkTenThousandRecordsOnePercentInvalid(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		a := b.api()
		oversize := `{"x":"` + strings.Repeat("a", models.MaxPayload) + `"}`
		var bodies []string
		valid := 0
		wantRefused := map[string]string{}
		for n := range 10 {
			recs := make([]string, 1000)
			for i := range recs {
				k := n*1000 + i
				switch {
				case k%300 == 7:
					recs[i] = fmt.Sprintf(`{"type":"order","id":"bad id %d","payload":{}}`, k)
					wantRefused[fmt.Sprintf("bad id %d", k)] = "the id must be 1 to 128 characters"
				case k%300 == 107:
					recs[i] = fmt.Sprintf(`{"type":"order","id":"%d","payload":%s}`, k, oversize)
					wantRefused[fmt.Sprint(k)] = "the limit is 262144"
				case k%300 == 207:
					recs[i] = fmt.Sprintf(`{"type":"order","id":"%d","payload":[%d]}`, k, k)
					wantRefused[fmt.Sprint(k)] = "the payload must be a JSON object"
				default:
					recs[i] = fmt.Sprintf(`{"type":"order","id":"%d","payload":{"title":"Order %d"}}`, k, k)
					valid++
				}
			}
			bodies = append(bodies, "["+strings.Join(recs, ",")+"]")
		}
		require.InDelta(t, 100, len(wantRefused), 1, "1%% invalid")
		send := func(wantChanged bool) {
			for n, body := range bodies {
				code, out := a.postBatch("application/json", body)
				require.Equal(t, http.StatusOK, code, "batch %d: %s", n, out.Error)
				for _, r := range out.Results {
					if want, bad := wantRefused[r.ID]; bad {
						require.Equal(t, "refused", r.Result, r.ID)
						require.Contains(t, r.Reason, want, r.ID)
					} else {
						require.Equal(t, map[bool]string{true: "changed", false: "unchanged"}[wantChanged], r.Result, r.ID)
					}
				}
			}
		}
		send(true)
		require.EqualValues(t, valid, b.count(&models.Record{}), "exactly the valid records are stored")
		var queued int64
		require.NoError(t, db.Model(&models.Link{}).Where("status = ?", models.StatusNew).Count(&queued).Error)
		require.EqualValues(t, valid, queued, "and queued")
		require.NoError(t, db.Model(&models.Link{}).Where("1 = 1").Update("status", models.StatusSuccess).Error)

		send(false)
		require.NoError(t, db.Model(&models.Link{}).Where("status <> ?", models.StatusSuccess).Count(&queued).Error)
		require.Zero(t, queued, "every batch again queues nothing")
	})
}
