package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/outbox"
)

// FuzzReadBatch feeds the batch reader and the record decoder any body, as
// an array or as NDJSON: they never panic; a body refused whole is a 400 or
// a 413 in words; a valid JSON array of 1 to 1,000 values is always taken;
// and every record taken is either refused in words or read as it was sent.
func FuzzReadBatch(f *testing.F) {
	for _, seed := range []string{
		`[{"type":"order","id":"1","payload":{"a":1}}]`,
		"{\"type\":\"order\",\"id\":\"1\",\"payload\":{}}\n\n{\"type\":\"order\",\"id\":\"2\",\"payload\":[]}\r\n",
		`[{"type":"order","id":1,"payload":{}}, "x", null, {"type":"order","id":"2"}]`,
		`[{"type":"order",,}]`, `[`, `{}`, `[]`, "\n\n", `[{"type":"\u202e","id":"\ud800","payload":{"x":1e999}}]`,
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, ndjson bool) {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/records", bytes.NewReader(body))
		req.Header.Set("Content-Type", map[bool]string{false: "application/json", true: contentNDJSON}[ndjson])
		raws, err := readBatch(req)
		if err != nil {
			var se *statusError
			require.True(t, errors.As(err, &se), "refused whole with a status: %v", err)
			require.Contains(t, []int{http.StatusBadRequest, http.StatusRequestEntityTooLarge}, se.status)
			require.NotEmpty(t, se.message)
			var values []json.RawMessage
			if !ndjson && json.Unmarshal(body, &values) == nil {
				require.True(t, len(values) == 0 || len(values) > outbox.MaxBatch, "a valid array of 1 to 1,000 values is taken: %v", err)
			}
			return
		}
		require.NotEmpty(t, raws)
		require.LessOrEqual(t, len(raws), outbox.MaxBatch)
		for _, raw := range raws {
			in, err := decodeBatchRecord(raw)
			if err != nil {
				require.IsType(t, &models.InvalidError{}, err)
				continue
			}
			var want batchRecordJSON
			require.NoError(t, json.Unmarshal(raw, &want))
			require.Equal(t, want.Type, in.Type)
			require.Equal(t, want.ID, in.ID)
			require.Equal(t, []byte(want.Payload), in.Payload)
		}
	})
}
