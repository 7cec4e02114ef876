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
// value, the other filters kept; value "" drops the cursor (the first page).
// The request's own query is left as it is.
func pageURL(c echo.Context, path, cursor, value string) string {
	q := maps.Clone(c.QueryParams())
	q.Del(cursor)
	if value != "" {
		q.Set(cursor, value)
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
	return pageURL(c, path, cursor, "")
}

// idCursor is an id as a page cursor.
func idCursor(id int64) string { return strconv.FormatInt(id, 10) }

// cursorParam reads an id cursor from the query: 0 when absent, a 400 when
// it is not a positive number.
func cursorParam(c echo.Context, name string) (int64, error) {
	raw := c.QueryParam(name)
	if raw == "" {
		return 0, nil
	}
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return 0, errBadRequest("The page cursor is not valid; go back to the first page.")
	}
	return id, nil
}
