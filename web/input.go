package web

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/sync/outbox"
)

// maxFormBody bounds a page form's body. The largest form, a bulk retry of
// maxBulk ids, is about 20 KB.
const maxFormBody = 256 << 10

// readableText answers 400 for an address whose path parameters or query
// hold what no text column can store — a NUL byte or invalid UTF-8 — which
// Postgres would otherwise refuse mid-request with a 500. It also undoes
// the escapes Echo leaves in path parameters when it matches on the escaped
// path (an id with a "/" or "%" in it), so that every handler reads
// "A:1" whether the client sent "A:1" or "A%3A1": one record, not two.
func readableText(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		values := c.ParamValues()
		if r.URL.RawPath != "" {
			unescaped := make([]string, len(values))
			for i, v := range values {
				u, err := url.PathUnescape(v)
				if err != nil {
					return errBadRequest("The address is not valid: it holds a broken %-escape.")
				}
				unescaped[i] = u
			}
			c.SetParamValues(unescaped...)
			values = unescaped
		}
		query, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			return errBadRequest("The address is not valid: its query holds a broken %-escape.")
		}
		if !allText(values) || !allText(flatten(query)) {
			return errBadRequest("The address holds characters that are not text (a NUL byte or invalid UTF-8).")
		}
		return next(c)
	}
}

// readableForm caps a page form's body before anything reads it (the CSRF
// check parses the form first) and answers 400 for form values that are not
// text, as readableText does for the address.
func readableForm(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			return next(c)
		}
		if r.ContentLength > maxFormBody {
			return &statusError{http.StatusRequestEntityTooLarge, "The form is too large."}
		}
		r.Body = http.MaxBytesReader(c.Response(), r.Body, maxFormBody)
		form, err := c.FormParams()
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			return &statusError{http.StatusRequestEntityTooLarge, "The form is too large."}
		case err != nil:
			return errBadRequest("Could not read the form.")
		}
		if !allText(flatten(form)) {
			return errBadRequest("The form holds characters that are not text (a NUL byte or invalid UTF-8).")
		}
		return next(c)
	}
}

// recordKey answers 400 for a record's address whose type or id no record
// may have (outbox.CheckKey: a bidi control such as U+202E, a slash, a
// space…), in the words of that check, before a handler reads them: "no
// service is configured for records of type …" or a 404 would hide why.
func recordKey(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := outbox.CheckKey(c.Param("type"), c.Param("id")); err != nil {
			return err
		}
		return next(c)
	}
}

func flatten(v url.Values) []string {
	var out []string
	for k, vs := range v {
		out = append(out, k)
		out = append(out, vs...)
	}
	return out
}

func allText(values []string) bool {
	for _, v := range values {
		if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
			return false
		}
	}
	return true
}

// bodyMedia is the media type of a request's body, one of accepted, which
// sendAs says in words ("a record is sent as application/json"); another,
// none, or a Content-Type that cannot be read is answered 415 in those
// words. None is refused too: the API's description (openapi.yaml), which
// README points clients to, takes these bodies only with their type, and a
// body of unknown type may be a form that merely looks like JSON.
func bodyMedia(r *http.Request, sendAs string, accepted ...string) (string, error) {
	header := r.Header.Get("Content-Type")
	if strings.TrimSpace(header) == "" {
		return "", &statusError{http.StatusUnsupportedMediaType, sendAs + "; the request has no Content-Type"}
	}
	media, _, err := mime.ParseMediaType(header)
	if err != nil {
		return "", &statusError{http.StatusUnsupportedMediaType, fmt.Sprintf("%s; the Content-Type %q could not be read", sendAs, header)}
	}
	if !slices.Contains(accepted, media) {
		return "", &statusError{http.StatusUnsupportedMediaType, fmt.Sprintf("%s, not %s", sendAs, media)}
	}
	return media, nil
}
