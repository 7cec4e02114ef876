package connector

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// seenRequest is what a provider got: method, path and body.
type seenRequest struct{ method, path, body string }

func recordingProvider(t *testing.T, status int) (*httptest.Server, func() []seenRequest) {
	var mu sync.Mutex
	var seen []seenRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, seenRequest{r.Method, r.URL.Path, string(b)})
		mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []seenRequest { mu.Lock(); defer mu.Unlock(); return seen }
}

func withObject(svc config.Service, change func(*config.Object)) config.Service {
	o := svc.Objects["order"]
	change(&o)
	svc.Objects = map[string]config.Object{"order": o}
	return svc
}

func TestDeleteCallsTheDeleteAndTakesA404ForDone(t *testing.T) {
	srv, seen := recordingProvider(t, http.StatusNotFound)
	c := NewHTTP("crm", withObject(service(srv.URL), func(o *config.Object) { o.Delete = "DELETE /deals/{external_id}" }), redact.New(nil), nil)
	require.True(t, c.CanDelete("order"))
	call := c.Delete(context.Background(), Record{LocalType: "order", LocalID: "1", Key: "site_order_1", ExternalID: "d1", Payload: []byte(`{}`)})
	require.Equal(t, OK, call.Class, "a 404 to a delete: the object is gone already")
	require.Equal(t, "deal.delete", call.Operation)
	require.Equal(t, 404, call.HTTPCode)
	require.Equal(t, "crm holds no object d1 (HTTP 404): it is gone already", call.Error)
	require.Equal(t, []seenRequest{{"DELETE", "/deals/d1", ""}}, seen())

	bare := NewHTTP("crm", service(srv.URL), redact.New(nil), nil)
	require.False(t, bare.CanDelete("order"))
}

func TestArchiveSendsItsBodyAndAFailureIsAFailure(t *testing.T) {
	srv, seen := recordingProvider(t, http.StatusForbidden)
	svc := withObject(service(srv.URL), func(o *config.Object) {
		o.Archive = "PATCH /deals/{external_id}"
		o.ArchiveBody = config.Body{Fields: map[string]string{"archived": "true", "note": `"deleted: \(.title)"`}}
	})
	c := NewHTTP("crm", svc, redact.New(nil), nil)
	require.True(t, c.CanDelete("order"))
	call := c.Delete(context.Background(), Record{LocalType: "order", LocalID: "1", Key: "site_order_1", ExternalID: "d1",
		Payload: []byte(`{"title":"Order 1"}`)})
	require.Equal(t, Permanent, call.Class)
	require.Equal(t, "deal.archive", call.Operation)
	require.Equal(t, []seenRequest{{"PATCH", "/deals/d1", `{"archived":true,"note":"deleted: Order 1"}`}}, seen())
}
