package redact

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
)

// handler redacts records on their way to the handler that writes them.
type handler struct {
	inner slog.Handler
	r     *Redactor
	// masked is set inside a WithGroup whose name is sensitive: every value
	// logged in it belongs to that field.
	masked bool
}

// NewHandler returns a slog.Handler that redacts every record before inner
// sees it: the message and every string go through Text; an attribute whose
// key is sensitive, at any group depth, becomes "[redacted]" whatever its
// kind; errors become Text(err.Error()); []byte and other values are
// redacted as JSON. Attributes given to WithAttrs are redacted as well.
// A nil r means New(nil).
func NewHandler(inner slog.Handler, r *Redactor) slog.Handler {
	if r == nil {
		r = New(nil)
	}
	return &handler{inner: inner, r: r}
}

// Enabled defers to the inner handler.
func (h *handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

// Handle passes a redacted copy of rec to the inner handler.
func (h *handler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.Text(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a, h.masked))
		return true
	})
	return h.inner.Handle(ctx, out)
}

// WithAttrs redacts as before the inner handler keeps them.
func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	return &handler{inner: h.inner.WithAttrs(h.attrs(as, h.masked)), r: h.r, masked: h.masked}
}

// WithGroup opens a group; everything in a group with a sensitive name is masked.
func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &handler{inner: h.inner.WithGroup(name), r: h.r, masked: h.masked || h.r.Sensitive(name)}
}

func (h *handler) attrs(as []slog.Attr, masked bool) []slog.Attr {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = h.attr(a, masked)
	}
	return out
}

// attr redacts one attribute. A group under a sensitive key is replaced as a
// whole; a group without a key is inlined by slog, so its members are masked
// one by one instead.
func (h *handler) attr(a slog.Attr, masked bool) slog.Attr {
	v := a.Value.Resolve()
	masked = masked || h.r.Sensitive(a.Key)
	if v.Kind() == slog.KindGroup && (a.Key == "" || !masked) {
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(h.attrs(v.Group(), masked)...)}
	}
	if masked {
		return slog.String(a.Key, redacted)
	}
	return slog.Attr{Key: a.Key, Value: h.value(v)}
}

func (h *handler) value(v slog.Value) slog.Value {
	switch v.Kind() {
	case slog.KindString:
		return slog.StringValue(h.r.Text(v.String()))
	case slog.KindInt64, slog.KindUint64:
		if cardLike(v.String()) {
			return slog.StringValue(cardMask)
		}
	case slog.KindAny:
		return h.anyValue(v.Any())
	}
	return v
}

// anyValue redacts a value slog would otherwise print with fmt or encoding/json.
func (h *handler) anyValue(x any) slog.Value {
	switch x := x.(type) {
	case error:
		return slog.StringValue(h.r.Text(x.Error()))
	case []byte:
		return jsonOrString(h.r.JSON(x))
	case json.RawMessage:
		return jsonOrString(h.r.JSON(x))
	case fmt.Stringer:
		return slog.StringValue(h.r.Text(x.String()))
	}
	b, err := json.Marshal(x)
	if err != nil {
		return slog.StringValue(h.r.Text(fmt.Sprintf("%+v", x)))
	}
	return jsonOrString(h.r.JSON(b))
}

// jsonOrString logs redacted JSON as JSON (so a JSON handler nests it) and
// anything else as a string.
func jsonOrString(b []byte) slog.Value {
	if json.Valid(b) {
		return slog.AnyValue(rawJSON(b))
	}
	return slog.StringValue(string(b))
}

// rawJSON is JSON that is already redacted and encoded. A JSON handler embeds
// it; a text handler prints it as text.
type rawJSON []byte

// MarshalJSON returns the JSON as is.
func (j rawJSON) MarshalJSON() ([]byte, error) { return j, nil }

// MarshalText returns the JSON as text.
func (j rawJSON) MarshalText() ([]byte, error) { return j, nil }

// String returns the JSON as a string, for handlers that use fmt.
func (j rawJSON) String() string { return string(j) }
