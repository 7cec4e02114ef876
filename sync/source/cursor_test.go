package source

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// A source whose table is renamed, or which is switched to a change query,
// under the same name does not go on from the old table's cursor (rows of
// the new table below it would be skipped silently): the start stops,
// naming the setting and the two ways out. A new name reads the new table
// from its start; the old setting put back goes on from the cursor.
func TestSourceCursorKeptForItsTable(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := newBiz(t, "postgres")
		b.createOutbox(t)
		b.createOutboxNamed(t, "orders_outbox")
		b.createItems(t)
		ctx := context.Background()
		for i := range 5 {
			require.NoError(t, b.insert(ctx, b.db, "item", fmt.Sprint(i), payload(i), "upsert"))
			require.NoError(t, b.insertInto(ctx, b.db, "orders_outbox", "item", fmt.Sprint(100+i), payload(i), "upsert"))
		}
		w := newWorld(t, db, nil)
		old := b.outboxSource()
		require.NoError(t, w.source(t, old).Drain(ctx))
		require.EqualValues(t, 5, cursor(t, db).LastID)

		renamed := old
		renamed.Table = "orders_outbox"
		_, err := New(ctx, "shop", renamed, db, w.eng, Options{Log: w.logger})
		require.ErrorContains(t, err, "setting sources.shop.table: the cursor of source shop was kept for the outbox table syncdesk_outbox and has read it up to id 5")
		require.ErrorContains(t, err, "To read the outbox table orders_outbox from its start, give the source a new name")
		require.ErrorContains(t, err, "put back table: syncdesk_outbox")

		query := b.changeSource(time.Minute, "shop")
		_, err = New(ctx, "shop", query, db, w.eng, Options{Log: w.logger})
		require.ErrorContains(t, err, "setting sources.shop.query: the cursor of source shop was kept for the outbox table syncdesk_outbox")
		require.ErrorContains(t, err, "put back table: syncdesk_outbox (without query:)")
		require.EqualValues(t, 5, cursor(t, db).LastID, "the refused starts left the cursor as it was")

		require.NoError(t, w.source(t, renamed, "orders").Drain(ctx))
		require.Len(t, records(t, db), 10, "under a new name the new table is read from its start")
		s := w.source(t, old)
		require.NoError(t, b.insert(ctx, b.db, "item", "5", payload(5), "upsert"))
		require.NoError(t, s.Drain(ctx))
		c := cursor(t, db)
		require.EqualValues(t, 6, c.LastID, "the old setting put back goes on from its cursor")
		require.EqualValues(t, 6, c.RowsRead)
	})
}

// A change query's cursor is kept for its query's text (its spaces aside):
// another query, or the outbox table, under the same name stops the start.
func TestSourceCursorKeptForItsQuery(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := newBiz(t, "mysql")
		b.createItems(t)
		b.createOutbox(t)
		ctx := context.Background()
		require.NoError(t, b.insertItem(ctx, b.db, 7, b.now(t).Add(-time.Hour), `{"name": "old"}`))
		w := newWorld(t, db, nil)
		q := b.changeSource(time.Minute, "shop")
		require.NoError(t, w.source(t, q).Drain(ctx))
		require.NotNil(t, cursor(t, db).LastAt)

		relaid := q
		relaid.Query = "SELECT id,  updated_at,\n  doc AS payload\nFROM items "
		require.NoError(t, w.source(t, relaid).Drain(ctx), "the same query laid out anew")

		other := q
		other.Query = "SELECT id, updated_at, doc AS payload FROM items WHERE id > 100"
		_, err := New(ctx, "shop", other, db, w.eng, Options{Log: w.logger})
		require.ErrorContains(t, err, `setting sources.shop.query: the cursor of source shop was kept for the change query "SELECT id, updated_at, doc AS payload FROM items" and has read it up to updated_at `)
		require.ErrorContains(t, err, "id 7; reading the new change query on from it would skip rows")
		require.ErrorContains(t, err, `put back query: "SELECT id, updated_at, doc AS payload FROM items"`)

		_, err = New(ctx, "shop", b.outboxSource(), db, w.eng, Options{Log: w.logger})
		require.ErrorContains(t, err, "setting sources.shop.table: the cursor of source shop was kept for the change query")
		require.ErrorContains(t, err, "(without table:)")
	})
}

// A cursor counts an outbox table by its id column, and reads a change
// query's rows as its type: another id column or type under the same name
// stops the start, naming the setting; a cursor made before it said what it
// counts by takes the configured column.
func TestSourceCursorKeptForItsIDColumnAndType(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := newBiz(t, "postgres")
		b.createOutbox(t)
		b.createItems(t)
		ctx := context.Background()
		for i := range 3 {
			require.NoError(t, b.insert(ctx, b.db, "item", fmt.Sprint(i), payload(i), "upsert"))
		}
		w := newWorld(t, db, nil)
		old := b.outboxSource()
		require.NoError(t, w.source(t, old).Drain(ctx))
		c := cursor(t, db)
		require.EqualValues(t, 3, c.LastID)
		require.Equal(t, "id", c.ReadBy)

		bySeq := old
		bySeq.Columns.ID = "seq"
		_, err := New(ctx, "shop", bySeq, db, w.eng, Options{Log: w.logger})
		require.ErrorContains(t, err, "setting sources.shop.columns.id: the cursor of source shop counts the outbox table syncdesk_outbox "+
			"by its column id and has read it up to id 3; counting by seq on from there would skip rows")
		require.ErrorContains(t, err, "give the source a new name; to go on from the cursor, put back columns.id: id")

		// As migration 0037 left a cursor made before it.
		require.NoError(t, db.Model(&models.SourceCursor{}).Where("source = ?", "shop").Update("read_by", "").Error)
		require.NoError(t, w.source(t, old).Drain(ctx))
		require.Equal(t, "id", cursor(t, db).ReadBy, "the configured column is taken")

		q := b.changeSource(time.Minute, "items")
		require.NoError(t, b.insertItem(ctx, b.db, 7, b.now(t).Add(-time.Hour), `{"name": "old"}`))
		require.NoError(t, w.source(t, q, "items").Drain(ctx))
		require.Equal(t, "item", cursorOf(t, db, "items").ReadBy)
		product := q
		product.Type = "product"
		_, err = New(ctx, "items", product, db, w.eng, Options{Log: w.logger})
		require.ErrorContains(t, err, "setting sources.items.type: the cursor of source items was kept for records of type item "+
			"and has read the change query up to updated_at ")
		require.ErrorContains(t, err, "the rows it passed would never be read as type product")
		require.ErrorContains(t, err, "put back type: item")
		require.EqualValues(t, 7, cursorOf(t, db, "items").LastID, "the refused start left the cursor as it was")
	})
}

// A cursor that has passed no row takes whatever the source reads now; a
// cursor made before cursors said what they read takes the configured
// table on its first start, as there is nothing to compare it with.
func TestSourceCursorFreshOrOlderTakesTheConfiguredTable(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := newBiz(t, "postgres")
		b.createOutboxNamed(t, "orders_outbox")
		b.createOutbox(t)
		ctx := context.Background()
		w := newWorld(t, db, nil)
		require.NoError(t, w.source(t, b.outboxSource()).Drain(ctx), "an empty table: the cursor stays at the start")
		require.Equal(t, "syncdesk_outbox", cursor(t, db).ReadFrom)
		require.NoError(t, b.insertInto(ctx, b.db, "orders_outbox", "item", "1", payload(1), "upsert"))
		cfg := b.outboxSource()
		cfg.Table = "orders_outbox"
		require.NoError(t, w.source(t, cfg).Drain(ctx))
		c := cursor(t, db)
		require.Equal(t, [2]string{"table", "orders_outbox"}, [2]string{c.ReadMode, c.ReadFrom})
		require.EqualValues(t, 1, c.LastID)

		// As migration 0035 left a cursor made before it: no identity.
		require.NoError(t, db.Model(&models.SourceCursor{}).Where("source = ?", "shop").
			Updates(map[string]any{"read_mode": "", "read_from": ""}).Error)
		require.NoError(t, w.source(t, b.outboxSource()).Drain(ctx))
		c = cursor(t, db)
		require.Equal(t, [2]string{"table", "syncdesk_outbox"}, [2]string{c.ReadMode, c.ReadFrom})
	})
}

// Two instances started with different tables under one name while the
// cursor was fresh (a deploy half done): once one has read, the other's
// next drain refuses the cursor and says so on the page, instead of
// reading its table from the other's position.
func TestSourceCursorClaimedOnEveryDrain(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := newBiz(t, "postgres")
		b.createOutbox(t)
		b.createOutboxNamed(t, "orders_outbox")
		ctx := context.Background()
		for i := range 3 {
			require.NoError(t, b.insert(ctx, b.db, "item", fmt.Sprint(i), payload(i), "upsert"))
			require.NoError(t, b.insertInto(ctx, b.db, "orders_outbox", "item", fmt.Sprint(100+i), payload(i), "upsert"))
		}
		w := newWorld(t, db, nil)
		cfg := b.outboxSource()
		cfg.Table = "orders_outbox"
		oldInstance, newInstance := w.source(t, b.outboxSource()), w.source(t, cfg)
		require.NoError(t, newInstance.Drain(ctx))
		err := oldInstance.Drain(ctx)
		require.ErrorContains(t, err, "setting sources.shop.table: the cursor of source shop was kept for the outbox table orders_outbox")
		c := cursor(t, db)
		require.Contains(t, c.LastError, "give the source a new name")
		require.EqualValues(t, 3, c.RowsRead, "the old instance read nothing")
		require.Len(t, records(t, db), 3)
	})
}
