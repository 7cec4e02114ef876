package web

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/action"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

func TestRecordsAPIDeleteRemovesTheObjectAndIsIdempotent(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		a := b.api()
		code, out := a.do("PUT", "/api/v1/records/order/7", `{"title":"Order 7","total":"10.00"}`)
		require.Equal(t, http.StatusOK, code, out)
		require.NoError(t, b.eng.Drain(context.Background()))
		require.Equal(t, 1, b.crm.CountByKey("site_order_7"))

		code, out = a.do("DELETE", "/api/v1/records/order/7", "")
		require.Equal(t, http.StatusOK, code, out)
		require.Equal(t, true, out["changed"])
		require.NotEmpty(t, out["deleted_at"])
		require.Equal(t, "new", out["links"].([]any)[0].(map[string]any)["status"], "the delete is queued")
		require.EqualValues(t, 1, b.auditCount(action.RecordDelete, models.OutcomeSuccess))

		require.NoError(t, b.eng.Drain(context.Background()))
		require.Zero(t, b.crm.CountByKey("site_order_7"), "the object is gone from the CRM")
		code, out = a.do("GET", "/api/v1/records/order/7", "")
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, "deleted", out["links"].([]any)[0].(map[string]any)["status"])
		require.NotEmpty(t, out["deleted_at"])

		code, out = a.do("DELETE", "/api/v1/records/order/7", "")
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, false, out["changed"], "a second delete changes nothing")
		require.EqualValues(t, 1, b.auditCount(action.RecordDelete, models.OutcomeSuccess), "and is not audited again")

		code, out = a.do("DELETE", "/api/v1/records/order/8", "")
		require.Equal(t, http.StatusNotFound, code)
		require.Equal(t, "There is no record order/8 to delete: not found.", out["error"])
		require.Equal(t, http.StatusBadRequest, a.send("DELETE", "/api/v1/records/order/a%20b", "").status)
		require.Equal(t, http.StatusUnauthorized, b.client().do(http.MethodDelete, "/api/v1/records/order/7", nil, nil).status)

		code, out = a.do("PUT", "/api/v1/records/order/7", `{"title":"Order 7","total":"10.00"}`)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, true, out["changed"], "written again after its delete, the record lives again")
		require.Nil(t, out["deleted_at"])
		require.NoError(t, b.eng.Drain(context.Background()))
		require.Equal(t, 1, b.crm.CountByKey("site_order_7"), "created anew")
	})
}

func TestRecordsAPIBulkDeletesWithOpDelete(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		a := b.api()
		code, out := a.postBatch("application/json", `[{"type":"order","id":"1","payload":{"title":"Order 1"}},
			{"type":"order","id":"2","payload":{"title":"Order 2"}}]`)
		require.Equal(t, http.StatusOK, code, out)
		require.NoError(t, b.eng.Drain(context.Background()))
		code, out = a.postBatch("application/json", `[{"type":"order","id":"1","op":"delete"},
			{"type":"order","id":"1","op":"delete"},
			{"type":"order","id":"9","op":"delete"},
			{"type":"order","id":"2","op":"delete","payload":{}},
			{"type":"order","id":"2","op":"erase"},
			{"type":"order","id":"3","op":"upsert","payload":{"title":"Order 3"}}]`)
		require.Equal(t, http.StatusOK, code, out)
		require.Equal(t, []string{
			"changed",
			"refused: the same type and id came earlier in this batch, as record 1",
			"refused: there is no record order/9 to delete: not found",
			`refused: a delete carries no payload: {"type": …, "id": …, "op": "delete"}`,
			`refused: the op must be "upsert" (the default) or "delete", not "erase"`,
			"changed",
		}, out.results())
		require.NoError(t, b.eng.Drain(context.Background()))
		require.Zero(t, b.crm.CountByKey("site_order_1"), "deleted at the CRM")
		require.Equal(t, 1, b.crm.CountByKey("site_order_2"), "a refused delete deletes nothing")
		code, again := a.postBatch("application/x-ndjson", `{"type":"order","id":"1","op":"delete"}`+"\n")
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, []string{"unchanged"}, again.results(), "a deleted record deleted again")
	})
}
