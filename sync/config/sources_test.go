package config

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// src is a configuration with one source, shop, its settings in extra.
func src(extra string) string {
	return svc("") + "sources:\n  shop:\n    " + strings.ReplaceAll(extra, "\n", "\n    ") + "\n"
}

func TestSourceDefaults(t *testing.T) {
	t.Setenv("SHOP_DSN", "postgres://shop:pw@127.0.0.1/shop")
	cfg, err := Load(writeFile(t, src("driver: postgres\ndsn: ${SHOP_DSN}\ntable: syncdesk_outbox")), Overrides{})
	require.NoError(t, err)
	s := cfg.Sources["shop"]
	require.True(t, s.OutboxMode())
	require.Equal(t, OutboxColumns{ID: "id", Type: "type", LocalID: "local_id", Payload: "payload", Op: "op"}, s.Columns)
	require.Equal(t, DefaultSourceBatch, s.BatchSize)
	require.Equal(t, time.Second, s.Poll)
	require.Equal(t, 30*time.Second, s.GapTimeout)
	require.Equal(t, time.Minute, s.ReadTimeout)
	require.Equal(t, "postgres://shop:pw@127.0.0.1/shop", s.ExpandedDSN())
	require.Equal(t, "postgres 127.0.0.1:5432/shop", s.Where(), "no credentials")

	cfg, err = Load(writeFile(t, src("driver: mysql\ndsn: 'shop:pw@tcp(db:3306)/shop'\nquery: SELECT id, updated_at, doc AS payload FROM orders\ntype: order")), Overrides{})
	require.NoError(t, err)
	s = cfg.Sources["shop"]
	require.False(t, s.OutboxMode())
	require.Equal(t, time.Minute, s.RereadWindow)
	require.Equal(t, "mysql db:3306/shop", s.Where())
	zone, err := s.Zone()
	require.NoError(t, err)
	require.Equal(t, time.UTC, zone, "updated_at without a zone is on UTC's clock unless time_zone says otherwise")

	cfg, err = Load(writeFile(t, src("driver: mysql\ndsn: 'shop:pw@tcp(db:3306)/shop'\nquery: SELECT id, updated_at, doc AS payload FROM orders\ntype: order\ntime_zone: America/New_York")), Overrides{})
	require.NoError(t, err)
	zone, err = cfg.Sources["shop"].Zone()
	require.NoError(t, err)
	require.Equal(t, "America/New_York", zone.String())
}

func TestBadSourceNamesTheSetting(t *testing.T) {
	t.Setenv("SHOP_DSN", "postgres://shop:pw@127.0.0.1/shop")
	const pg = "driver: postgres\ndsn: ${SHOP_DSN}\n"
	for _, tc := range []struct{ yaml, want string }{
		{"driver: oracle\ndsn: x\ntable: t", `setting sources.shop.driver: "oracle" is not postgres or mysql`},
		{"driver: postgres\ndsn: ${SYNCDESK_NO_SUCH_VAR}\ntable: t", "setting sources.shop.dsn: names environment variables that are not set: SYNCDESK_NO_SUCH_VAR"},
		{"driver: postgres\ntable: t", "setting sources.shop.dsn: is required"},
		{"driver: mysql\ndsn: 'root:pw@tcp(127.0.0.1:3306'\ntable: t", "setting sources.shop.dsn: is not a MySQL DSN"},
		{pg + "table: t\nquery: SELECT 1", "setting sources.shop.table: give either table"},
		{pg, "setting sources.shop.table: give either table"},
		{pg + "table: 'outbox; DROP TABLE x'", "setting sources.shop.table"},
		{pg + "table: t\ncolumns: {payload: 'payload, secret'}", "setting sources.shop.columns.payload"},
		{pg + "table: t\nbatch_size: 5000", "setting sources.shop.batch_size: must be 1 to 1000"},
		{pg + "table: t\npoll: -1s", "setting sources.shop.poll"},
		{pg + "table: t\ngap_timeout: -1s", "setting sources.shop.gap_timeout"},
		{pg + "table: t\nread_timeout: -5s", "setting sources.shop.read_timeout: must be a positive duration such as 1s, got -5s"},
		{pg + "table: t\ntype: order", "setting sources.shop.type: is for a change query"},
		{pg + "query: DELETE FROM orders\ntype: order", "setting sources.shop.query: must be one SELECT"},
		{pg + "query: SELECT id, updated_at, doc AS payload FROM orders", "setting sources.shop.type: a change query's rows need"},
		{pg + "query: SELECT id, updated_at, doc AS payload FROM orders\ntype: invoice", `setting sources.shop.type: no service has objects of type "invoice"`},
		{pg + "query: SELECT id, updated_at, doc AS payload FROM orders\ntype: order\nreread_window: -1m", "setting sources.shop.reread_window"},
		{pg + "table: t\nwindow: 1m", ".window: there is no such setting"},
		{pg + "table: t\nreread_window: 5m", "setting sources.shop.reread_window: is for a change query (query:); an outbox table does not use it"},
		{pg + "table: t\ntime_zone: Europe/Kyiv", "setting sources.shop.time_zone: is for a change query (query:)"},
		{pg + "query: SELECT id, updated_at, doc AS payload FROM orders\ntype: order\ntime_zone: Europe/Kiev2", `setting sources.shop.time_zone: "Europe/Kiev2" is not a time zone`},
		{pg + "query: SELECT id, updated_at, doc AS payload FROM orders\ntype: order\ntime_zone: Local", `setting sources.shop.time_zone: "Local" is not a time zone`},
		{pg + "query: SELECT id, updated_at, doc AS payload FROM orders\ntype: order\ntime_zone: ../../etc/passwd", "setting sources.shop.time_zone"},
		{pg + "query: SELECT id, updated_at, doc AS payload FROM orders\ntype: order\ngap_timeout: 1m", "setting sources.shop.gap_timeout: is for an outbox table"},
		{pg + "query: SELECT id, updated_at, doc AS payload FROM orders\ntype: order\ntypes: {shop_order: order}", "setting sources.shop.types: is for an outbox table"},
		{pg + "query: SELECT id, updated_at, doc AS payload FROM orders\ntype: order\ncolumns: {payload: doc}", "setting sources.shop.columns: is for an outbox table"},
	} {
		_, err := Load(writeFile(t, src(tc.yaml)), Overrides{})
		require.Error(t, err, tc.yaml)
		require.Contains(t, err.Error(), tc.want, tc.yaml)
	}
}

// A DSN that cannot be read is refused without being quoted: it holds a
// password. The password is among the secrets the redactor masks.
func TestSourceDSNPasswordIsASecret(t *testing.T) {
	const pw = "Sup3r-secret-pw"
	t.Setenv("SHOP_DSN", "postgres://shop:"+pw+"@127.0.0.1:99999999/shop")
	_, err := Load(writeFile(t, src("driver: postgres\ndsn: ${SHOP_DSN}\ntable: t")), Overrides{})
	require.ErrorContains(t, err, "setting sources.shop.dsn")
	require.NotContains(t, err.Error(), pw)

	_, err = Load(writeFile(t, src("driver: mysql\ndsn: 'shop:"+pw+"@tcp(127.0.0.1:3306'\ntable: t")), Overrides{})
	require.ErrorContains(t, err, "setting sources.shop.dsn")
	require.NotContains(t, err.Error(), pw)

	for _, dsn := range []string{"driver: postgres\ndsn: 'host=db user=shop password=" + pw + " dbname=shop'",
		"driver: mysql\ndsn: 'shop:" + pw + "@tcp(db:3306)/shop'"} {
		cfg, err := Load(writeFile(t, src(dsn+"\ntable: t")), Overrides{})
		require.NoError(t, err)
		require.Contains(t, cfg.Secrets(), pw, dsn)
		require.NotContains(t, cfg.Sources["shop"].Where(), pw)
	}
}
