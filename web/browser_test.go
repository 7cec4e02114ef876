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
	browsertest.Parallel(t)
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

// An admin adds a user and creates a token from the Users page; each secret
// is shown once, and both actions land in the audit log.
func TestBrowserAdminAddsUserAndToken(t *testing.T) {
	browsertest.Parallel(t)
	b := setupSQLite(t)
	b.user("root@example.com", models.RoleAdmin)
	ctx := browsertest.New(t)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+"/users"),
		chromedp.WaitVisible(testid("sign-in")),
		chromedp.SendKeys(testid("email"), "root@example.com"),
		chromedp.SendKeys(testid("password"), testPassword),
		chromedp.Click(testid("sign-in")),
		chromedp.WaitVisible(testid("users-table")),
		chromedp.SendKeys("#new-email", "ana@example.com"),
		chromedp.SetValue("#new-role", "operator"),
		chromedp.Click(testid("add-user")),
		chromedp.WaitVisible(testid("secret")),
	))
	secret, err := chromedp.Run(ctx, chromedp.Text(testid("secret")))
	require.NoError(t, err)
	require.Contains(t, secret, "Password for ana@example.com")
	browsertest.Screenshot(ctx, t, "users")
	u, err := models.UserByEmail(b.db, "ana@example.com")
	require.NoError(t, err)
	require.Equal(t, models.RoleOperator, u.Role)

	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys("#token-name", "shop-backend"),
		chromedp.Click(testid("create-token")),
		chromedp.WaitVisible(testid("tokens-table")),
	))
	secret, err = chromedp.Run(ctx, chromedp.Text(testid("secret")))
	require.NoError(t, err)
	require.Contains(t, secret, "sdk_")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+"/audit"),
		chromedp.WaitVisible(testid("audit-table")),
	))
	table, err := chromedp.Run(ctx, chromedp.Text(testid("audit-table")))
	require.NoError(t, err)
	for _, action := range []string{"auth.login", "user.add", "token.create"} {
		require.Contains(t, table, action)
	}
	browsertest.Screenshot(ctx, t, "audit")
}

// The page that shows a new token's secret does not keep the form's address:
// a reload shows /users without the secret and makes no second token.
func TestBrowserReloadAfterCreatingATokenPostsNothing(t *testing.T) {
	browsertest.Parallel(t)
	b := setupSQLite(t)
	b.user("root@example.com", models.RoleAdmin)
	ctx := browsertest.New(t)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+"/users"),
		chromedp.WaitVisible(testid("sign-in")),
		chromedp.SendKeys(testid("email"), "root@example.com"),
		chromedp.SendKeys(testid("password"), testPassword),
		chromedp.Click(testid("sign-in")),
		chromedp.WaitVisible(testid("users-table")),
		chromedp.SendKeys("#token-name", "shop-backend"),
		chromedp.Click(testid("create-token")),
		chromedp.WaitVisible(testid("secret")),
	))
	browsertest.Screenshot(ctx, t, "token-secret")
	loc, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	require.Equal(t, b.srv.URL+"/users", loc, "the address is the page's, not the form's")

	require.NoError(t, chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(testid("tokens-table"))))
	body, err := chromedp.Run(ctx, chromedp.OuterHTML("body"))
	require.NoError(t, err)
	require.NotContains(t, body, `data-testid="secret"`, "the secret is shown once")
	require.EqualValues(t, 1, b.auditCount("token.create", models.OutcomeSuccess), "the reload made no second token")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(`[data-testid="tokens-table"] button.btn-danger`),
		chromedp.WaitVisible(testid("confirm")),
	))
	browsertest.Screenshot(ctx, t, "token-revoke-confirm")
	require.Zero(t, b.auditCount("token.revoke", models.OutcomeSuccess), "the first click only asks")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(testid("confirm-yes")), chromedp.WaitVisible(testid("tokens-table"))))
	require.EqualValues(t, 1, b.auditCount("token.revoke", models.OutcomeSuccess))
}
