package sandbox

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDriftThroughTheAdminEndpoint(t *testing.T) {
	p := NewCRM(Options{})
	t.Cleanup(p.Close)
	for i := range 6 {
		p.Insert(map[string]any{"external_key": "site_order_" + string(rune('a'+i)), "title": "t"})
	}
	srv := httptest.NewServer(p)
	defer srv.Close()

	res, err := http.Post(srv.URL+driftPath, "application/json", strings.NewReader(`{"delete":2,"alter":1,"unlinked":1,"duplicate":1}`))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	objs := p.Objects()
	require.Len(t, objs, 6-2+1+1)
	altered, dupKey := 0, ""
	for _, o := range objs {
		if o["title"] == "edited in the provider" {
			altered++
		}
	}
	require.Equal(t, 1, altered)
	require.Equal(t, 1, p.CountByKey("site_order_drift_0"), "an unlinked object carries a key we never sent")
	for _, o := range objs {
		if k := o["external_key"].(string); p.CountByKey(k) == 2 {
			dupKey = k
		}
	}
	require.NotEmpty(t, dupKey, "one key now has two objects")

	for _, body := range []string{`{"delete":-1}`, `{"nope":1}`, `not json`} {
		res, err := http.Post(srv.URL+driftPath, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusBadRequest, res.StatusCode, body)
	}
}
