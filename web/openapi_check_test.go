package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// openAPISpec is the served document, loaded and validated once for the
// whole test binary, with a router that finds an operation for a request.
type openAPISpec struct {
	doc    *openapi3.T
	router routers.Router
}

var loadOpenAPISpec = sync.OnceValues(func() (*openAPISpec, error) {
	openapi3filter.RegisterBodyDecoder("application/x-ndjson", decodeNDJSON)
	raw, err := openAPIJSON()
	if err != nil {
		return nil, err
	}
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		return nil, fmt.Errorf("load the OpenAPI document: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("the OpenAPI document is not valid: %w", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route the OpenAPI document: %w", err)
	}
	return &openAPISpec{doc: doc, router: router}, nil
})

// decodeNDJSON reads one JSON value per line, blank lines skipped, as the
// elements of an array: how the document describes a batch sent as NDJSON.
func decodeNDJSON(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	raw, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	out := []any{}
	for n, line := range bytes.Split(raw, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n+1, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// seenResponses records "test|operationId|status" for every API answer the
// check passed, so that a test can tell which documented answers it saw.
var seenResponses sync.Map

// openAPIChecked is the web tests' transport: every call under /api/ and
// its answer are checked against the document, and a mismatch fails the
// test that made the call. Installed in client(), so every API test checks.
type openAPIChecked struct {
	t    testing.TB
	base http.RoundTripper
}

func (o openAPIChecked) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasPrefix(req.URL.Path, "/api/") {
		return o.base.RoundTrip(req)
	}
	var reqBody []byte
	if req.Body != nil {
		var err error
		if reqBody, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		_ = req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	res, err := o.base.RoundTrip(req)
	if err != nil {
		return res, err
	}
	resBody, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(resBody))
	op, err := checkOpenAPI(req, reqBody, res.StatusCode, res.Header, resBody)
	if err != nil {
		// Errorf, not FailNow: calls come from many goroutines at once.
		o.t.Errorf("OpenAPI: %s %s → %d: %v\n%.300s", req.Method, req.URL.RequestURI(), res.StatusCode, err, resBody)
	} else if op != "" {
		seenResponses.Store(fmt.Sprintf("%s|%s|%d", o.t.Name(), op, res.StatusCode), true)
	}
	return res, nil
}

// checkOpenAPI checks one call against the document and names the
// operation it was. A request the document refuses must be refused (4xx);
// every answer must be one the operation documents, in status, headers,
// content type and body. A path the document lacks must answer 404 or 405
// (or 401, without a token).
func checkOpenAPI(req *http.Request, reqBody []byte, status int, header http.Header, resBody []byte) (string, error) {
	spec, err := loadOpenAPISpec()
	if err != nil {
		return "", err
	}
	ctx := context.Background()
	r := req.Clone(ctx)
	r.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, params, err := spec.router.FindRoute(r)
	if err != nil {
		// The token is asked for first, so an unknown path under /api/v1 answers 401 without one.
		if status != http.StatusNotFound && status != http.StatusMethodNotAllowed && status != http.StatusUnauthorized {
			return "", fmt.Errorf("not in the document (%v), yet answered as if it were", err)
		}
		return "", checkErrorBody(spec, header, resBody)
	}
	opts := &openapi3filter.Options{AuthenticationFunc: bearerPresent, IncludeResponseStatus: true}
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route, Options: opts}
	if reqErr := openapi3filter.ValidateRequest(ctx, in); reqErr != nil && (status < 400 || status >= 500) {
		return "", fmt.Errorf("the document refuses the request (%v), yet syncdesk answered %d", reqErr, status)
	}
	err = openapi3filter.ValidateResponse(ctx, &openapi3filter.ResponseValidationInput{RequestValidationInput: in,
		Status: status, Header: header, Body: io.NopCloser(bytes.NewReader(resBody)), Options: opts})
	if err != nil {
		return "", fmt.Errorf("the answer is not the one documented: %w", err)
	}
	return route.Operation.OperationID, nil
}

// bearerPresent is what the document can say of a token: that one was
// sent. Whether it is live only the server knows (and answers 401).
func bearerPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	scheme, token, ok := strings.Cut(in.RequestValidationInput.Request.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return errors.New("no bearer token")
	}
	return nil
}

// checkErrorBody checks an answer to an undocumented path: JSON, in the
// documented error shape.
func checkErrorBody(spec *openAPISpec, header http.Header, body []byte) error {
	if ct := header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("an error answered %q, not JSON", ct)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("an error answered a body that is not JSON: %w", err)
	}
	return spec.doc.Components.Schemas["Error"].Value.VisitJSON(v, openapi3.EnableJSONSchema2020())
}
