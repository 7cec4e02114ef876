package web

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/web/browsertest"
)

// A deleted record's link reads "Deleted" on its page, in the links list
// (also under the deleted filter) and on the record's page, which says
// when; at 360 px and at 1366 px nothing runs off the screen.
func TestBrowserADeletedLinkSaysDeleted(t *testing.T) {
	browsertest.Parallel(t)
	b := setupSQLite(t)
	b.user("ana@example.com", models.RoleOperator)
	_, err := b.eng.Upsert(context.Background(), "order", "1", []byte(`{"title":"Order 1","total":"10.00"}`))
	require.NoError(t, err)
	require.NoError(t, b.eng.Drain(context.Background()))
	res, err := b.eng.Delete(context.Background(), "order", "1")
	require.NoError(t, err)
	require.NoError(t, b.eng.Drain(context.Background()))
	id := res.Links[0].ID
	l, err := models.LinkByID(b.db, id)
	require.NoError(t, err)
	require.Equal(t, models.StatusDeleted, l.Status)

	ctx := browsertest.New(t)
	signInBrowser(t, ctx, b.srv.URL, "ana@example.com")
	for _, width := range []int64{360, 1366} {
		checkFits(t, ctx, b.srv.URL, page{name: "link-deleted", path: "/links/" + itoa(id)})
		require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(width, 800), chromedp.Reload(), chromedp.WaitVisible(testid("record-deleted"))))
		require.Contains(t, textOf(t, ctx, "main"), "Deleted")
		require.Contains(t, textOf(t, ctx, testid("record-deleted")), "This record was deleted")
		browsertest.Screenshot(ctx, t, "link-deleted-"+itoa(width))
	}
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.srv.URL+"/links?status=deleted"), chromedp.WaitVisible(testid("links-table"))))
	require.Contains(t, textOf(t, ctx, testid("links-table")), "Deleted")
	browsertest.Screenshot(ctx, t, "links-deleted")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.srv.URL+"/records/order/1"), chromedp.WaitVisible(testid("record-deleted"))))
	require.Contains(t, textOf(t, ctx, "main"), "Deleted")
	browsertest.Screenshot(ctx, t, "record-deleted")
}
