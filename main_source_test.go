package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/outbox"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// A configured source is read by the wired product: its rows become
// records through the engine, on the schedule.
func TestAConfiguredSourceIsRead(t *testing.T) {
	bizURL := dbtest.PostgresURL(t)
	biz, err := sql.Open("pgx", bizURL)
	require.NoError(t, err)
	defer biz.Close()
	_, err = biz.Exec(`CREATE TABLE syncdesk_outbox (id BIGSERIAL PRIMARY KEY, type TEXT NOT NULL, local_id TEXT NOT NULL, payload JSONB, op TEXT)`)
	require.NoError(t, err)
	for i := range 5 {
		_, err = biz.Exec(`INSERT INTO syncdesk_outbox (type, local_id, payload) VALUES ('shop_order', $1, '{"total": 1}')`, fmt.Sprint(i))
		require.NoError(t, err)
	}
	db := dbtest.SQLite(t)
	cfg := config.Default()
	cfg.Services = map[string]config.Service{"crm": {BaseURL: "http://127.0.0.1:1", Objects: map[string]config.Object{
		"order": {Create: "POST /deals", Update: "PUT /deals/{external_id}"}}}}
	cfg.Sources = map[string]config.Source{"shop": {Driver: "postgres", DSN: bizURL, Table: "syncdesk_outbox",
		Types: map[string]string{"shop_order": "order"}}}
	require.NoError(t, cfg.Complete())
	clk, err := outbox.DatabaseClock(context.Background(), db, clock.Real{})
	require.NoError(t, err)
	a, err := assemble(cfg, db, clk, slog.New(slog.DiscardHandler), redact.New(nil))
	require.NoError(t, err)
	a.sched.Start()
	defer a.stop()
	require.True(t, a.sched.Has("source-shop"))
	require.Eventually(t, func() bool {
		c, err := models.GetSourceCursor(db, "shop")
		return err == nil && c.LastID == 5
	}, 20*time.Second, 50*time.Millisecond)
	rec, err := models.RecordByKey(db, "order", "4")
	require.NoError(t, err, "the type was mapped and the record stored")
	require.JSONEq(t, `{"total": 1}`, string(rec.Payload))
}

func TestABadSourceStopsTheStart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "syncdesk.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`services:
  crm:
    base_url: http://127.0.0.1:9000
    objects: {order: {create: POST /deals, update: "PUT /deals/{external_id}"}}
sources:
  shop: {driver: oracle, dsn: "x", table: syncdesk_outbox}
`), 0o600))
	code, _, errOut := cmd(t, "", "--config", file, "--db", "sqlite:"+filepath.Join(t.TempDir(), "x.db"))
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `setting sources.shop.driver: "oracle" is not postgres or mysql`)
}
