package web

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/views"
	"github.com/syncdesk/syncdesk/web/browsertest"
)

// overflowJS says why the page is wider than the screen, or "" when it is
// not: the document's width, and the element reaching furthest right that no
// scrolling box of its own holds (a table scrolling inside its card is not
// the page scrolling).
const overflowJS = `(() => {
	const vw = window.innerWidth, sw = document.documentElement.scrollWidth;
	if (sw <= vw) return "";
	const held = el => {
		for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
			if (getComputedStyle(p).overflowX !== "visible") return true;
		}
		return false;
	};
	let widest = null, right = 0;
	for (const el of document.querySelectorAll("body *")) {
		const r = el.getBoundingClientRect();
		if (r.width > 0 && r.right >= right && !held(el)) { right = r.right; widest = el; }
	}
	const name = el => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
		(typeof el.className === "string" && el.className.trim() ? "." + el.className.trim().split(/\s+/).join(".") : "") +
		(el.dataset && el.dataset.testid ? "[data-testid=" + el.dataset.testid + "]" : "");
	if (!widest) return sw + " px wide on a " + vw + " px screen";
	return sw + " px wide on a " + vw + " px screen; widest: " + name(widest) + " in " + name(widest.parentElement) +
		", right edge at " + Math.round(right) + " px: \"" + widest.textContent.trim().slice(0, 80) + "\"";
})()`

// headerJS reports the first menu item or sign-out control that falls
// outside the dark header, or "".
const headerJS = `(() => {
	const bar = document.querySelector(".topbar");
	if (!bar) return "";
	const b = bar.getBoundingClientRect();
	for (const el of bar.querySelectorAll("nav a, .who, .who *")) {
		const r = el.getBoundingClientRect();
		if (r.right > b.right + 0.5 || r.bottom > b.bottom + 0.5 || r.left < b.left - 0.5) return el.textContent.trim();
	}
	return "";
})()`

// unstackedJS reports, on a narrow screen, a table in the page that still
// shows its header row, or a cell with no label: "" when every table is a
// stack of labelled cards.
const unstackedJS = `(() => {
	for (const t of document.querySelectorAll("main table")) {
		const id = t.dataset.testid || t.className;
		if (t.tHead && t.tHead.getBoundingClientRect().height > 1) return id + ": the header row shows";
		for (const c of t.querySelectorAll("tbody td, tbody th")) {
			if (c.offsetParent !== null && !c.dataset.label && !c.classList.contains("actions") && c.colSpan === 1) {
				return id + ": a cell has no label: " + c.textContent.trim().slice(0, 40);
			}
		}
	}
	return "";
})()`

// page is one page the test opens: a path, or steps that end on it.
type page struct {
	name string
	path string
	open func(ctx context.Context) error // instead of path: for a page reached by a form
}

// Every page, signed in as an admin with tables full of rows, then the
// sign-in page, a 404 and a viewer's 403: at 360 px and at 1366 px none is
// wider than the screen, and the menu and sign-out stay in the header. At
// 360 px every table is a stack of labelled cards, with a link's status and
// actions before its other lines.
func TestBrowserEveryPageFitsTheScreen(t *testing.T) {
	browsertest.Parallel(t)
	d := startDemo(t, true)
	now := time.Now()
	longEmail := "someone.with.a.very.long.address@support.example-company.com"
	for _, u := range []struct {
		email string
		role  models.Role
	}{{"root@example.com", models.RoleAdmin}, {"ana@example.com", models.RoleOperator}, {"vic@example.com", models.RoleViewer}, {longEmail, models.RoleOperator}} {
		_, err := models.CreateUser(d.db, u.email, u.role, testPassword, now)
		require.NoError(t, err)
	}
	_, err := models.DisableUser(d.db, longEmail, now)
	require.NoError(t, err)
	_, _, err = models.CreateAPIToken(d.db, "shop-backend-production-eu-west", "root@example.com", now)
	require.NoError(t, err)
	require.NoError(t, models.Audit(d.db, models.AuditEntry{At: now, Actor: longEmail, Action: "link.sync",
		Target: "link " + itoa(d.failed.ID), Outcome: models.OutcomeDenied, IP: "2001:db8:85a3:0000:0000:8a2e:0370:7334",
		Detail: "already in progress since 08:21:58, started by " + longEmail}))
	seedEvent(t, d.db, "payments", "evt_1QpRefundWithAVeryLongIdentifier0042", "charge.refunded.partially", models.EventFailed, now)
	report := seedRun(t, d.db, now, 12)
	// A run stopped at the safety valve, with what it listed at the provider
	// beside what it scanned here: the widest row the runs table shows.
	require.NoError(t, d.db.Model(&models.ReconciliationRun{}).Where("id = ?", report).Updates(map[string]any{
		"status": models.RunAwaiting, "scanned": 12_491, "listed": 0, "service": "payments-eu-production"}).Error)
	var record models.Record
	require.NoError(t, d.db.Where("local_type = ? AND local_id = ?", d.failed.LocalType, d.failed.LocalID).First(&record).Error)
	var ev models.ProcessedEvent
	require.NoError(t, d.db.Order("received_at DESC").First(&ev).Error)
	group := d.failed.ErrorGroup
	seedIncidents(t, d.db, now)

	pages := []page{
		{name: "overview", path: "/"},
		{name: "links", path: "/links"},
		{name: "links-failed", path: "/links?status=failed"},
		{name: "link", path: views.LinkURL(d.failed.ID)},
		{name: "record", path: views.RecordURL(record.LocalType, record.LocalID)},
		{name: "failed", path: "/failed"},
		{name: "failed-group", path: "/failed/group?g=" + url.QueryEscape(group)},
		{name: "retry-confirm", open: func(ctx context.Context) error {
			return chromedp.Do(ctx, chromedp.Navigate(d.srv.URL+"/failed"), chromedp.Click(testid("retry-group-0")),
				chromedp.WaitVisible(testid("confirm-count")))
		}},
		{name: "events", path: "/events"},
		{name: "events-failed", path: "/events?outcome=failed"},
		{name: "event", path: "/events/" + url.PathEscape(ev.Provider) + "/" + url.PathEscape(ev.EventID)},
		{name: "audit", path: "/audit"},
		{name: "users", path: "/users"},
		{name: "reconcile", path: "/reconcile"},
		{name: "reconcile-run", path: fmt.Sprintf("/reconcile/%d", d.run.ID)},
		{name: "reconcile-report", path: fmt.Sprintf("/reconcile/%d", report)},
		{name: "schedules", path: "/schedules"},
		{name: "services", path: "/services"},
		{name: "alerts", path: "/alerts"},
		{name: "not-found", path: "/links/999999999"},
	}
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, d.srv.URL, "root@example.com")
	for _, p := range pages {
		checkFits(t, ctx, d.srv.URL, p)
	}
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(360, 800),
		chromedp.Navigate(d.srv.URL+"/links"), chromedp.WaitVisible(testid("links-table"))))
	order, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const row = document.querySelector('[data-testid="links-table"] tbody tr');
		const top = label => [...row.cells].find(c => c.dataset.label === label).getBoundingClientRect().top;
		const status = top("Status"), actions = row.querySelector(".actions").getBoundingClientRect().top;
		if (!(top("Record") < status && status < actions && actions < top("Service") && actions < top("Changed")))
			return "record " + top("Record") + ", status " + status + ", actions " + actions + ", service " + top("Service");
		return "";
	})()`))
	require.NoError(t, err)
	require.Empty(t, order, "on a phone a link's card reads record, status, actions, then the rest")
	// A row that arrives by an htmx swap is labelled too.
	relabelled, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const tbody = document.querySelector('[data-testid="links-table"] tbody');
		const row = tbody.rows[0].cloneNode(true);
		[...row.cells].forEach(c => c.removeAttribute("data-label"));
		tbody.prepend(row);
		tbody.dispatchEvent(new CustomEvent("htmx:afterSwap", {bubbles: true}));
		return row.cells[0].dataset.label || "";
	})()`))
	require.NoError(t, err)
	require.Equal(t, "Record", relabelled)
	// On a desk's screen the tables of many columns show whole, with no
	// scrolling inside their card: the overview's counts by status (beside
	// the syncs in progress down to 1160 px, under them below) and the
	// reconciliation runs.
	for _, c := range []struct {
		path, table string
		widths      []int64
	}{{"/", "status-table", []int64{1366, 1180, 1100}}, {"/reconcile", "runs-table", []int64{1366}}} {
		for _, width := range c.widths {
			require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(width, 800),
				chromedp.Navigate(d.srv.URL+c.path), chromedp.WaitVisible(testid(c.table))))
			hidden, err := chromedp.Run(ctx, chromedp.Evaluate[float64](
				`(() => { const box = document.querySelector('[data-testid="`+c.table+`"]').parentElement; return box.scrollWidth - box.clientWidth; })()`))
			require.NoError(t, err)
			require.LessOrEqual(t, hidden, 0.0, "at %d px %s's %s scrolls inside its card by %v px", width, c.path, c.table, hidden)
		}
	}
	// A run's kinds: on a phone only those it found anything of are cards
	// (six lines each), the others named in one line; on a desk all seven
	// rows explain what each kind means.
	kindsShown := `(() => [...document.querySelectorAll('[data-testid="run-kinds"] tbody tr')].filter(r => r.offsetParent !== null).length + " " +
		(document.querySelector('[data-testid="kinds-nothing-found"]').offsetParent !== null))()`
	for width, want := range map[int64]string{360: "2 true", 1366: "7 false"} {
		require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(width, 800),
			chromedp.Navigate(fmt.Sprintf("%s/reconcile/%d", d.srv.URL, report)), chromedp.WaitVisible("main")))
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](kindsShown))
		require.NoError(t, err)
		require.Equal(t, want, got, "at %d px: kinds shown as rows, and whether the line naming the others shows", width)
	}
	note, err := chromedp.Run(ctx, chromedp.TextContent(testid("kinds-nothing-found")))
	require.NoError(t, err)
	require.Equal(t, "Nothing found of the other kinds: Not linked here; Fields differ; Never sent; Failed, but it arrived; Deleted here, still there.", note)

	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1366, 800), chromedp.Navigate(d.srv.URL+"/links"), chromedp.WaitVisible(testid("links-table"))))
	header, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.querySelector('[data-testid="links-table"] thead').getBoundingClientRect().height`))
	require.NoError(t, err)
	require.Greater(t, header, 10.0, "at 1366 px the links are a table with its header row")

	require.NoError(t, chromedp.Do(ctx, chromedp.Click(testid("logout")), chromedp.WaitVisible(testid("sign-in"))))
	checkFits(t, ctx, d.srv.URL, page{name: "login", path: "/login"})
	signInBrowser(t, ctx, d.srv.URL, "vic@example.com")
	checkFits(t, ctx, d.srv.URL, page{name: "forbidden", path: "/users"})
	text, err := chromedp.Run(ctx, chromedp.Text(testid("problem")))
	require.NoError(t, err)
	require.Contains(t, strings.ToLower(text), "error 403", "the viewer's /users is the 403 page")
}

// checkFits opens p at 1366 px and at 360 px and fails when the page is
// wider than the screen, naming the widest element; at 360 px it also
// checks the header and the tables, and takes the screenshot.
func checkFits(t *testing.T, ctx context.Context, base string, p page) {
	t.Helper()
	for _, width := range []int64{1366, 360} {
		require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(width, 800)))
		if p.open != nil {
			require.NoError(t, p.open(ctx), p.name)
		} else {
			require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+p.path)), p.name)
		}
		require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible("main")), p.name)
		wide, err := chromedp.Run(ctx, chromedp.Evaluate[string](overflowJS))
		require.NoError(t, err)
		assert.Empty(t, wide, "%s (%s) at %d px", p.name, p.path, width)
		out, err := chromedp.Run(ctx, chromedp.Evaluate[string](headerJS))
		require.NoError(t, err)
		assert.Empty(t, out, "%s at %d px: this falls outside the header", p.name, width)
		if width == 360 {
			loose, err := chromedp.Run(ctx, chromedp.Evaluate[string](unstackedJS))
			require.NoError(t, err)
			assert.Empty(t, loose, "%s at 360 px: every table is a stack of labelled cards", p.name)
			browsertest.Screenshot(ctx, t, "narrow-"+p.name)
		}
	}
}
