package stripe

import (
	"fmt"
	"net/http"
)

// Errors come as {"error": {"type", "message", "param", "code"}} with the
// conventional statuses: 400 a bad request, 401 no valid API key, 404 no
// such object, 409 a request that conflicts with another (the same
// idempotency key) (https://docs.stripe.com/api/errors). Codes are those of
// https://docs.stripe.com/error-codes.

// Error types.
const (
	typeInvalidRequest = "invalid_request_error"
	typeIdempotency    = "idempotency_error"
	typeAPI            = "api_error"
)

// apiError is one refusal, in Stripe's words.
type apiError struct {
	status  int
	Type    string `json:"type"`
	Message string `json:"message"`
	Param   string `json:"param,omitempty"`
	Code    string `json:"code,omitempty"`
	// validation marks a refusal made before the endpoint began to run:
	// its answer is not saved under an idempotency key, so a corrected
	// retry with the same key is processed (https://docs.stripe.com/api/idempotent_requests).
	validation bool
}

// body is the JSON answer.
func (e *apiError) body() map[string]any { return map[string]any{"error": e} }

// invalidRequest is a 400 about the request as a whole.
func invalidRequest(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, Type: typeInvalidRequest,
		Message: fmt.Sprintf(format, args...), validation: true}
}

// invalidParam is a 400 about one parameter.
func invalidParam(param, code, format string, args ...any) *apiError {
	e := invalidRequest(format, args...)
	e.Param, e.Code = param, code
	return e
}

// unknownParam is Stripe's answer to a parameter the endpoint does not take.
func unknownParam(name string) *apiError {
	return invalidParam(name, "parameter_unknown", "Received unknown parameter: %s", name)
}

// missingParam is Stripe's answer to a required parameter left out.
func missingParam(name string) *apiError {
	return invalidParam(name, "parameter_missing", "Missing required param: %s.", name)
}

// noSuchObject is a 404 for an id that names nothing. It is not a
// validation error: the endpoint ran, so the answer is saved.
func noSuchObject(noun, id string) *apiError {
	return &apiError{status: http.StatusNotFound, Type: typeInvalidRequest, Param: "id",
		Code: "resource_missing", Message: fmt.Sprintf("No such %s: '%s'", noun, id)}
}

// noSuchCursor is a 400 for a cursor or reference naming no object.
func noSuchCursor(param, noun, id string) *apiError {
	return invalidParam(param, "resource_missing", "No such %s: '%s'", noun, id)
}

// unrecognizedURL is Stripe's 404 for a path or method it does not serve.
func unrecognizedURL(r *http.Request) *apiError {
	return &apiError{status: http.StatusNotFound, Type: typeInvalidRequest,
		Message: fmt.Sprintf("Unrecognized request URL (%s: %s).", r.Method, r.URL.Path)}
}

// authError is the 401 for a missing or wrong key. It never repeats the
// key: only its last four characters, as Stripe masks it.
func authError(given string) *apiError {
	msg := "You did not provide an API key. You need to provide your API key in the Authorization header, " +
		"using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY')."
	if given != "" {
		tail := given
		if len(tail) > 4 {
			tail = tail[len(tail)-4:]
		}
		msg = "Invalid API Key provided: ****" + tail
	}
	return &apiError{status: http.StatusUnauthorized, Type: typeInvalidRequest, Message: msg, validation: true}
}

// idempotencyMismatch is the 400 for a key reused with other parameters or
// on another endpoint.
func idempotencyMismatch(key string) *apiError {
	return &apiError{status: http.StatusBadRequest, Type: typeIdempotency, validation: true,
		Message: fmt.Sprintf("Keys for idempotent requests can only be used with the same parameters they were "+
			"first used with. Try using a key other than '%s' if you meant to execute a different request.", key)}
}

// idempotencyInUse is the 409 for a key whose first request is still running.
func idempotencyInUse(key string) *apiError {
	return &apiError{status: http.StatusConflict, Type: typeIdempotency, Code: "idempotency_key_in_use", validation: true,
		Message: fmt.Sprintf("There is currently another in-progress request using this Idempotent Key (that probably "+
			"means you submitted twice, and the other request is still going through): '%s'. Please try again later.", key)}
}

// serverError is the 500 of a problem at Stripe: type api_error, "API
// errors cover any other type of problem (e.g., a temporary problem with
// Stripe's servers), and are extremely uncommon"
// (https://docs.stripe.com/api/errors). Met while the endpoint runs, it is
// saved under the request's idempotency key like any other answer.
func serverError() *apiError {
	return &apiError{status: http.StatusInternalServerError, Type: typeAPI,
		Message: "An unknown error occurred on Stripe's servers. Please try again."}
}
