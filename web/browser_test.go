package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/web/browsertest"
)

func testid(id string) string { return `[data-testid="` + id + `"]` }

// A person opens syncdesk, is sent to sign in, signs in, sees the layout with
// their name, signs out — and the cookie they had no longer opens anything.
func TestBrowserSignInAndOut(t *testing.T) {
	b := setupSQLite(t)
	b.user("ana@example.com", models.RoleOperator)
	ctx := browsertest.New(t)

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+"/"),
		chromedp.WaitVisible(testid("sign-in")),
	))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(loc, b.srv.URL+"/login"), "landed on %s", loc)
	browsertest.Screenshot(ctx, t, "login")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(testid("email"), "ana@example.com"),
		chromedp.SendKeys(testid("password"), testPassword),
		chromedp.Click(testid("sign-in")),
		chromedp.WaitVisible(testid("signed-in-user")),
	))
	who, err := chromedp.Run(ctx, chromedp.Text(testid("signed-in-user")))
	require.NoError(t, err)
	require.Contains(t, who, "ana")
	require.Contains(t, strings.ToLower(who), "operator")
	loc, _ = chromedp.Run(ctx, chromedp.Location())
	require.Equal(t, b.srv.URL+"/", loc)
	browsertest.Screenshot(ctx, t, "overview")

	cookies, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{})
	require.NoError(t, err)
	var session string
	for _, ck := range cookies.Cookies {
		if ck.Name == sessionCookie {
			session = ck.Value
			require.True(t, ck.HTTPOnly, "the session cookie must be HttpOnly")
		}
	}
	require.NotEmpty(t, session, "the browser holds no session cookie")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(testid("logout")),
		chromedp.WaitVisible(testid("sign-in")),
	))
	loc, _ = chromedp.Run(ctx, chromedp.Location())
	require.True(t, strings.HasPrefix(loc, b.srv.URL+"/login"), "after sign-out: %s", loc)

	// The cookie the browser had is dead on the server.
	c := b.client()
	u, _ := url.Parse(b.srv.URL)
	c.http.Jar.SetCookies(u, []*http.Cookie{{Name: sessionCookie, Value: session}})
	r := c.get("/")
	require.Equal(t, http.StatusSeeOther, r.status)
	require.Equal(t, "/login", r.header.Get("Location"))
}
