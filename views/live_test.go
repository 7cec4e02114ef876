package views

import (
	"context"
	"strings"
	"testing"

	"github.com/a-h/templ"
	"github.com/stretchr/testify/require"
)

// A live region asks its page's address again; a page with no address of
// its own (one answering a form) keeps still instead of polling the form's.
func TestALiveRegionPollsOnlyAPageWithAnAddress(t *testing.T) {
	content := templ.Raw(`<p>3 failed</p>`)
	render := func(p Page) string {
		var b strings.Builder
		ctx := templ.WithChildren(context.Background(), content)
		require.NoError(t, Live(p, true).Render(ctx, &b))
		return b.String()
	}
	got := render(Page{URL: "/services"})
	require.Contains(t, got, `hx-get="/services"`)
	require.Contains(t, got, `<p>3 failed</p>`)

	got = render(Page{})
	require.NotContains(t, got, "hx-get")
	require.NotContains(t, got, "hx-trigger")
	require.Contains(t, got, `<p>3 failed</p>`)
}
