package web

import (
	"maps"
	"strconv"

	"github.com/labstack/echo/v4"
)

// pageOf trims rows read with one row more than a page (size+1) to the page,
// and says whether another page follows. Reading the extra row is how a
// full last page knows it is the last: "the page is full" does not.
func pageOf[T any](rows []T, size int) ([]T, bool) {
	if len(rows) > size {
		return rows[:size], true
	}
	return rows, false
}

// pageURL is the request's list at path with the cursor parameter set to
// value, the other filters kept; value 0 drops the cursor (the first page).
// The request's own query is left as it is.
func pageURL(c echo.Context, path, cursor string, value int64) string {
	q := maps.Clone(c.QueryParams())
	q.Del(cursor)
	if value > 0 {
		q.Set(cursor, strconv.FormatInt(value, 10))
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// newestURL is the first page of a paged list, or "" on the first page itself.
func newestURL(c echo.Context, path, cursor string) string {
	if c.QueryParam(cursor) == "" {
		return ""
	}
	return pageURL(c, path, cursor, 0)
}
