package web

import (
	"cmp"
	"fmt"
	"maps"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/views"
)

// describeService puts a service's configuration into the words of the
// Services page. Secrets come out as set or not set, never as values: the
// card is built from the configuration as written (${VAR} references), and
// the environment is only asked whether a variable holds something.
func describeService(name string, svc config.Service) views.ServiceCard {
	card := views.ServiceCard{Name: name, Kind: kindWords(svc), BaseURL: displayURL(svc.BaseURL),
		Timeout: shortDuration(svc.Timeout), Retry: retryWords(svc.Retry), ProbeEvery: shortDuration(svc.Breaker.ProbeEvery),
		Auth: authWords(svc.Auth), RateLimit: rateWords(svc.RateLimit)}
	if svc.Breaker.Off {
		card.ProbeEvery = "" // nothing tests the provider: an automatic pause from before is lifted by hand
	}
	for _, typ := range slices.Sorted(maps.Keys(svc.Objects)) {
		o := svc.Objects[typ]
		g := svc.Guarantee(typ)
		card.Routes = append(card.Routes, views.ServiceRoute{LocalType: typ, Remote: o.Remote, Operations: operations(o),
			Guarantee: g.Words, Guarded: g.Safe})
		if !g.Safe && (o.Create != "" || o.Upsert != "") {
			card.DuplicateRisks = append(card.DuplicateRisks, typ)
		}
	}
	for _, h := range slices.Sorted(maps.Keys(svc.Headers)) {
		st := secretState(svc.Headers[h])
		st.Name = h
		card.Headers = append(card.Headers, st)
	}
	if w := svc.Webhook; w != nil {
		card.Webhook = &views.ServiceWebhook{Path: "/hooks/" + name, Scheme: schemeWords(*w), Effects: effectsWords(*w)}
		card.EventEffects = eventEffects(name, *w)
		for i, sec := range w.Secrets {
			st := secretState(sec)
			st.Name = "Signing secret"
			if len(w.Secrets) > 1 {
				st.Name = fmt.Sprintf("Signing secret %d of %d", i+1, len(w.Secrets))
			}
			card.Webhook.Secrets = append(card.Webhook.Secrets, st)
		}
		if len(w.Secrets) == 0 {
			card.Webhook.Secrets = []views.SecretState{{Name: "Signing secret", Words: "not set"}}
		}
	}
	return card
}

// envRef matches a ${VAR} reference, as config.ExpandEnv does.
var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// secretState says whether a configured value is set: "set from $VAR" when
// it comes from the environment, "set" for a value written in the file.
func secretState(v string) views.SecretState {
	refs := envRef.FindAllStringSubmatch(v, -1)
	if len(refs) == 0 {
		if strings.TrimSpace(v) == "" {
			return views.SecretState{Words: "not set"}
		}
		return views.SecretState{Set: true, Words: "set"}
	}
	var names, empty []string
	for _, m := range refs {
		names = append(names, "$"+m[1])
		if os.Getenv(m[1]) == "" {
			empty = append(empty, "$"+m[1])
		}
	}
	if len(empty) > 0 {
		return views.SecretState{Words: "not set: " + strings.Join(empty, ", ") + " is empty"}
	}
	return views.SecretState{Set: true, Words: "set from " + strings.Join(names, ", ")}
}

// displayURL shows a base URL without a password or query values, where
// credentials sometimes hide.
func displayURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || raw == "" {
		return "(not a valid URL)"
	}
	hidden := u.RawQuery != ""
	u.RawQuery, u.Fragment = "", ""
	s := u.Redacted()
	if hidden {
		s += "?… (query hidden)"
	}
	return s
}

// kindWords names the connector and, for a preset, the provider.
func kindWords(svc config.Service) string {
	s := svc.Kind
	if s == "http" {
		s = "HTTP"
	}
	if svc.Preset != "" {
		s = cmp.Or(svc.Provider, svc.Preset) + " preset, over " + s
	}
	return s
}

// authWords says how syncdesk signs in, on top of the headers; secrets
// as set or not set only.
func authWords(a config.Auth) []views.SecretState {
	switch a.Type {
	case config.AuthBasic:
		user, pw := secretState(a.Username), secretState(a.Password)
		user.Name, pw.Name = "HTTP basic: user", "HTTP basic: password"
		return []views.SecretState{user, pw}
	case config.AuthOAuth2:
		grant := "client credentials"
		if a.RefreshToken != "" {
			grant = "refresh token"
		}
		id, sec := secretState(a.ClientID), secretState(a.ClientSecret)
		id.Name, sec.Name = "OAuth 2.0 ("+grant+"): client id", "OAuth 2.0 ("+grant+"): client secret"
		out := []views.SecretState{id, sec}
		if a.RefreshToken != "" {
			rt := secretState(a.RefreshToken)
			rt.Name = "OAuth 2.0: refresh token"
			out = append(out, rt)
		}
		return out
	}
	return nil
}

// rateWords says the configured pace; the provider's headers may slow it.
func rateWords(r config.RateLimit) string {
	var parts []string
	if r.PerSecond > 0 {
		parts = append(parts, strconv.FormatFloat(r.PerSecond, 'f', -1, 64)+" calls a second")
	}
	if r.Concurrent > 0 {
		parts = append(parts, fmt.Sprintf("at most %d at once", r.Concurrent))
	}
	if len(parts) == 0 {
		return "no limit of its own; slows down when the provider's headers say so"
	}
	return strings.Join(parts, ", ") + ", all instances together; slower when the provider's headers say so"
}

func operations(o config.Object) string {
	ops := []string{}
	if o.Create != "" {
		ops = append(ops, "create")
	}
	if o.Update != "" {
		ops = append(ops, "update")
	}
	if o.Lookup != "" {
		ops = append(ops, "look up")
	}
	if o.Upsert != "" {
		ops = append(ops, "upsert")
	}
	if o.List != "" {
		ops = append(ops, "list")
	}
	return strings.Join(ops, ", ")
}

// retryWords says the retry policy: "up to 6 attempts, backing off from 2s to 15m".
func retryWords(r config.Retry) string {
	if r.MaxAttempts <= 1 {
		return "1 attempt, no retries"
	}
	return fmt.Sprintf("up to %d attempts, backing off from %s to %s", r.MaxAttempts, shortDuration(r.Base), shortDuration(r.Max))
}

// shortDuration writes 15m rather than 15m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func schemeWords(w config.Webhook) string {
	switch w.Scheme {
	case "stripe":
		return "Stripe signatures (Stripe-Signature)"
	case "standard":
		return "Standard Webhooks signatures (webhook-signature)"
	case "github":
		return "GitHub signatures (X-Hub-Signature-256)"
	case "shopify":
		return "Shopify signatures (X-Shopify-Hmac-Sha256)"
	case "hubspot":
		return "HubSpot v3 signatures (X-HubSpot-Signature-v3)"
	case "hmac":
		return "HMAC-SHA256 signatures (" + w.Header + ")"
	}
	return w.Scheme
}

func effectsWords(w config.Webhook) string {
	r, err := w.Resolved()
	if err != nil || len(r.Effects.Table) == 0 {
		return "records events, applies nothing"
	}
	counts := map[string]int{}
	for _, e := range r.Effects.Table {
		counts[e.Kind()]++
	}
	var parts []string
	for _, k := range []struct{ kind, one, many string }{
		{config.EffectSetState, "1 sets a state", "%d set a state"},
		{config.EffectUpdateFields, "1 updates fields", "%d update fields"},
		{config.EffectKeepOurs, "1 pushes ours back", "%d push ours back"},
		{config.EffectMarkDeleted, "1 marks deleted", "%d mark deleted"},
		{config.EffectAdopt, "1 adopts", "%d adopt"},
		{config.EffectIgnore, "1 is ignored", "%d are ignored"},
	} {
		switch n := counts[k.kind]; {
		case n == 1:
			parts = append(parts, k.one)
		case n > 1:
			parts = append(parts, fmt.Sprintf(k.many, n))
		}
	}
	return fmt.Sprintf("applies %d kinds of event: %s", len(r.Effects.Table), strings.Join(parts, ", "))
}

// eventEffects says what each row of a webhook's effect table does, exact
// types first (sorted), then patterns from the most to the least specific,
// as the inbox chooses them.
func eventEffects(service string, w config.Webhook) []views.EventEffect {
	r, err := w.Resolved()
	if err != nil {
		return nil
	}
	keys := r.Entries()
	out := make([]views.EventEffect, 0, len(keys)+1)
	for _, k := range keys {
		out = append(out, views.EventEffect{On: k, Does: effectWords(service, r, r.Effects.Table[k])})
	}
	if _, any := r.Effects.Table["*"]; !any && len(out) > 0 {
		out = append(out, views.EventEffect{On: "*", Does: "stored, nothing done"})
	}
	return out
}

// effectWords is one effect in a support person's words.
func effectWords(service string, w config.Webhook, e config.Effect) string {
	switch e.Kind() {
	case config.EffectSetState:
		return fmt.Sprintf("sets %s to %s (never back: %s)", w.StateField, e.SetState, strings.Join(w.States, " → "))
	case config.EffectUpdateFields:
		if e.UpdateFields.Expr != "" {
			return "updates the record's fields from the event"
		}
		return "updates " + strings.Join(slices.Sorted(maps.Keys(e.UpdateFields.Fields)), ", ") + " from the event"
	case config.EffectKeepOurs:
		return "where the provider holds other values, pushes ours again"
	case config.EffectMarkDeleted:
		if e.MarkDeleted == config.DeletedRecreate {
			return "marks the object deleted and creates it again"
		}
		return "marks the object deleted; a person re-creates it from the link page"
	case config.EffectAdopt:
		if e.NewRecords != "" {
			return "links the object to the record whose key it carries, or keeps it as a new " + strings.ReplaceAll(e.NewRecords, "{service}", service) + " record"
		}
		return "links the object to the record whose key it carries"
	}
	return "ignored"
}
