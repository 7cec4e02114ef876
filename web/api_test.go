package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

func TestAPITokens(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		c := b.client()
		token, _, err := models.CreateAPIToken(db, "shop", "test", b.clock.Now())
		require.NoError(t, err)

		for _, h := range []string{"", "Bearer", "Bearer ", "Basic " + token, "Bearer sdk_wrong"} {
			r := c.do(http.MethodGet, "/api/v1/links", nil, http.Header{"Authorization": {h}})
			require.Equal(t, http.StatusUnauthorized, r.status, "Authorization %q", h)
			require.Contains(t, r.header.Get("WWW-Authenticate"), "Bearer")
		}
		auth := http.Header{"Authorization": {"Bearer " + token}}
		r := c.do(http.MethodGet, "/api/v1/links", nil, auth)
		require.Equal(t, http.StatusOK, r.status, r.body)
		require.JSONEq(t, `{"items":[]}`, r.body)

		var stored models.APIToken
		require.NoError(t, db.First(&stored).Error)
		require.NotContains(t, stored.TokenHash, token, "only a hash is stored")
		require.NotNil(t, stored.LastUsedAt)

		require.NoError(t, models.RevokeAPIToken(db, "shop", b.clock.Now()))
		require.Equal(t, http.StatusUnauthorized, c.do(http.MethodGet, "/api/v1/links", nil, auth).status)
	})
}

func TestAPIListLinksPagesNewestFirst(t *testing.T) {
	t.Parallel()
	b := setupSQLite(t)
	now := b.clock.Now()
	for i := 1; i <= 150; i++ {
		status := models.StatusSuccess
		if i%3 == 0 {
			status = models.StatusFailed
		}
		require.NoError(t, b.db.Create(&models.Link{LocalType: "order", LocalID: fmt.Sprint(i), ExternalService: "crm",
			ExternalKey: fmt.Sprintf("site_order_%d", i), Status: status, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now.Add(time.Duration(i))}).Error)
	}
	token, _, _ := models.CreateAPIToken(b.db, "shop", "test", now)
	auth := http.Header{"Authorization": {"Bearer " + token}}
	type page struct {
		Items []struct {
			LocalID string `json:"local_id"`
			Status  string `json:"status"`
		} `json:"items"`
		NextCursor string `json:"next_cursor"`
	}
	get := func(q string) page {
		r := b.client().do(http.MethodGet, "/api/v1/links"+q, nil, auth)
		require.Equal(t, http.StatusOK, r.status, r.body)
		var p page
		require.NoError(t, json.Unmarshal([]byte(r.body), &p))
		return p
	}
	first := get("")
	require.Len(t, first.Items, 100)
	require.Equal(t, "150", first.Items[0].LocalID)
	second := get("?cursor=" + first.NextCursor)
	require.Len(t, second.Items, 50)
	require.Equal(t, "50", second.Items[0].LocalID)
	require.Empty(t, second.NextCursor)

	failed := get("?status=failed&service=crm")
	require.Len(t, failed.Items, 50)
	for _, it := range failed.Items {
		require.Equal(t, "failed", it.Status)
	}
	require.Equal(t, http.StatusBadRequest, b.client().do(http.MethodGet, "/api/v1/links?cursor=-4", nil, auth).status)
}
