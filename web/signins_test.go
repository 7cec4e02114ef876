package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// The gate's rules, one turn at a time: an address holds at most
// checksPerAddress strangers' turns, running or waiting; known devices have
// turns of their own when the strangers' are all taken; a wait ends.
func TestSignInGateTurns(t *testing.T) {
	t.Parallel()
	g := newSignInGate()
	ctx := context.Background()
	g.wait = 20 * time.Millisecond
	enter := func(addr string, known bool) (func(), error) { return g.enter(ctx, addr, known) }
	var leaves []func()
	for _, addr := range []string{"a", "a", "b", "c"} {
		leave, err := enter(addr, false)
		require.NoError(t, err, addr)
		leaves = append(leaves, leave)
	}
	_, err := enter("a", false)
	require.ErrorIs(t, err, errAddressBusy, "a third turn for one address is refused at once")
	_, err = enter("d", false)
	require.ErrorIs(t, err, errNoTurn, "the strangers' turns are all taken")

	for range knownDeviceChecks {
		leave, err := enter("a", true)
		require.NoError(t, err, "a known device gets its own turn, even from a busy address")
		defer leave()
	}
	_, err = enter("e", true)
	require.ErrorIs(t, err, errNoTurn, "the known devices' turns are taken too")

	// Two sign-ins from d wait; a third is refused, waiting counts.
	g.wait = 5 * time.Second
	waited := make(chan error, 2)
	for range 2 {
		go func() {
			leave, err := enter("d", false)
			if err == nil {
				leave()
			}
			waited <- err
		}()
	}
	require.Eventually(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return g.byAddress["d"] == 2 }, time.Second, time.Millisecond)
	_, err = enter("d", false)
	require.ErrorIs(t, err, errAddressBusy)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = g.enter(cancelled, "f", false)
	require.ErrorIs(t, err, context.Canceled, "a sign-in whose browser went away stops waiting")
	leaves[0]()
	leaves[1]()
	require.NoError(t, <-waited)
	require.NoError(t, <-waited)

	leaves[2]()
	leaves[3]()
	g.mu.Lock()
	defer g.mu.Unlock()
	require.Empty(t, g.byAddress, "every address's count returns to nothing")
}

// 400 wrong sign-ins at once, each from its own address, while a browser
// that signed in before signs in again: it gets its own password check and
// is in promptly, a throttled address is refused at once instead of waiting
// behind them, and an address that sends many at once gets only a couple.
// The strangers are wrong, busy or still waiting, never a 5xx of another
// kind. (The wait for a turn is lengthened so that the queue stands while
// it is measured on a busy machine; the strangers are cancelled at the end.)
func TestStrangersCannotMakeAKnownBrowserWait(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		b.web.signIns.wait = time.Minute
		// At the product's cost: her check is timed against one of a stranger's.
		_, err := models.CreateUser(b.db, "ana@example.com", models.RoleOperator, testPassword, b.clock.Now())
		require.NoError(t, err)
		ana := b.client()
		require.Equal(t, http.StatusSeeOther, ana.login("ana@example.com", testPassword).status)
		require.NotNil(t, deviceCookieOf(ana), "a sign-in leaves a device cookie")
		require.Equal(t, http.StatusSeeOther, ana.post("/", "/logout", nil).status)
		require.NotNil(t, deviceCookieOf(ana), "signing out keeps it")
		throttled := b.client()
		throttled.ip = "192.0.2.66"
		for range b.cfg.Login.MaxFailuresPerIP {
			require.NoError(t, models.Audit(b.db, models.AuditEntry{At: b.clock.Now(), Actor: "anonymous", Action: "auth.login",
				Target: "someone@example.com", Outcome: models.OutcomeFailure, IP: throttled.ip}))
		}
		anaForm := signInForm(ana, "ana@example.com", testPassword)
		throttledForm := signInForm(throttled, "ana@example.com", testPassword)

		const strangers, shared = 400, 10
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var wg sync.WaitGroup
		var mu sync.Mutex
		codes, sharedCodes := map[int]int{}, map[int]int{}
		stranger := func(ip, email string, into map[int]int) {
			defer wg.Done()
			c := b.client()
			c.ip = ip
			c.http.Timeout = 0 // a stranger waits until the end
			status, body, err := postSignIn(ctx, c, signInForm(c, email, "wrong"))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil && ctx.Err() != nil:
				into[0]++ // still waiting at the end
			case err != nil:
				t.Errorf("%s: %v", ip, err)
			case status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable:
				require.Contains(t, body, "Too many sign-ins at this moment", "status %d", status)
				fallthrough
			default:
				into[status]++
			}
		}
		for i := range strangers {
			wg.Add(1)
			go stranger(fmt.Sprintf("10.0.%d.%d", i/250, i%250+1), fmt.Sprintf("guess-%d@example.com", i), codes)
		}
		require.Eventually(t, func() bool { return b.web.signIns.strangersWaiting() >= strangers/2 },
			time.Minute, time.Millisecond, "the strangers' checks are taken and half of them wait")
		for i := range shared { // at once from one address
			wg.Add(1)
			go stranger("198.51.100.200", fmt.Sprintf("shared-%d@example.com", i), sharedCodes)
		}
		// One check's time on this machine as it is now, busy with the storm:
		// a sign-in that waits behind no one takes a few of them.
		check := onePasswordCheck()

		start := time.Now()
		status, body, err := postSignIn(ctx, throttled, throttledForm)
		refusedIn := time.Since(start)
		require.NoError(t, err)
		require.Equal(t, http.StatusTooManyRequests, status, body)
		require.Contains(t, body, "Too many failed sign-ins")

		waiting := b.web.signIns.strangersWaiting()
		start = time.Now()
		status, body, err = postSignIn(ctx, ana, anaForm)
		signedIn := time.Since(start)
		cancel()
		wg.Wait()

		t.Logf("one password check %v (during the storm); known browser signed in in %v, throttled address refused in %v, "+
			"with %d strangers waiting as it began; strangers %v, one shared address %v (0: still waiting at the end)",
			check, signedIn, refusedIn, waiting, codes, sharedCodes)
		require.NoError(t, err)
		require.Equal(t, http.StatusSeeOther, status, "the known browser signs in: %s", body)
		require.Less(t, signedIn, 5*check, "the known browser waited behind strangers")
		require.Less(t, refusedIn, 5*check, "the throttled address waited for a turn it would not use")
		require.Greater(t, waiting, strangers/2, "the storm must still be on when the known browser signs in")
		for code := range codes {
			require.Contains(t, []int{0, http.StatusUnauthorized}, code, "strangers: wrong or still waiting, nothing else: %v", codes)
		}
		require.Equal(t, shared-checksPerAddress, sharedCodes[http.StatusTooManyRequests], "one address gets %d turns: %v", checksPerAddress, sharedCodes)
	})
}

// signInForm is the sign-in form with the CSRF token of c's login page.
func signInForm(c *client, email, password string) url.Values {
	return url.Values{"email": {email}, "password": {password}, "_csrf": {c.csrf("/login")}}
}

// postSignIn posts a sign-in form as c would, until ctx ends.
func postSignIn(ctx context.Context, c *client, form url.Values) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.b.srv.URL+"/login", strings.NewReader(form.Encode()))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-For", c.ip)
	res, err := c.http.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	return res.StatusCode, string(body), err
}

// deviceCookieOf is the device cookie the client's jar sends to /login, the
// only path it goes to.
func deviceCookieOf(c *client) *http.Cookie {
	u, _ := url.Parse(c.b.srv.URL + "/login")
	for _, ck := range c.http.Jar.Cookies(u) {
		if ck.Name == deviceCookie {
			return ck
		}
	}
	return nil
}

// onePasswordCheck times one argon2 check on this machine, now: the median of three.
func onePasswordCheck() time.Duration {
	hash, _ := models.HashPassword("x")
	var took []time.Duration
	for range 3 {
		start := time.Now()
		models.CheckPassword(hash, "y")
		took = append(took, time.Since(start))
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	return took[1]
}

// strangersWaiting counts, for the tests, the strangers' sign-ins that hold
// no turn yet (a known browser may hold a strangers' turn too, so it is a
// lower bound).
func (g *signInGate) strangersWaiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, held := range g.byAddress {
		n += held
	}
	return max(n-len(g.strangers), 0)
}
