package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "syncdesk.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

func TestPrecedenceFlagsOverEnvOverFileOverDefaults(t *testing.T) {
	p := writeFile(t, "addr: 127.0.0.1:7000\ndb: sqlite:/tmp/file.db\nsession: {idle_timeout: 30m}\n")

	cfg, err := Load(p, Overrides{})
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:7000", cfg.Addr)
	require.Equal(t, 30*time.Minute, cfg.Session.IdleTimeout)
	require.Equal(t, Default().Session.AbsoluteTimeout, cfg.Session.AbsoluteTimeout, "unset values keep their defaults")

	t.Setenv("SYNCDESK_ADDR", "127.0.0.1:7001")
	cfg, err = Load(p, Overrides{})
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:7001", cfg.Addr, "the environment beats the file")
	require.Equal(t, "sqlite:/tmp/file.db", cfg.DB)

	cfg, err = Load(p, Overrides{Addr: "127.0.0.1:7002", DB: "postgres://u@h/db"})
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:7002", cfg.Addr, "a flag beats the environment")
	require.Equal(t, "postgres://u@h/db", cfg.DB)
}

func TestBadValuesNameTheSetting(t *testing.T) {
	t.Setenv("SYNCDESK_TEST_EMPTY", "")
	t.Setenv("SYNCDESK_TEST_FROM_FILE", "tok-123\n") // as a secret read from a file ends
	for _, tc := range []struct{ yaml, want string }{
		{"addr: nonsense", "setting addr"},
		{"db: mysql://x", "setting db"},
		{"session: {idle_timeout: -1s}", "setting session.idle_timeout"},
		{"login: {max_failures: 0}", "setting login.max_failures"},
		{"log: {level: loud}", "setting log.level"},
		{"trusted_proxies: [nope]", "setting trusted_proxies"},
		{"tls: {cert_file: a.pem}", "setting tls"},
		{"sesion: {}", "setting sesion: there is no such setting (line 1)"},
		{"login: {window: soon}", "setting login.window: `soon` is not a duration such as 30s, 5m or 8h (line 1)"},
		{"login: {max_failures: 5, window: 30}", "setting login.window: `30` is not a duration"},
		{"login:\n  max_failures: five\n", "setting login.max_failures: `five` is not a whole number (line 2)"},
		{"session: {idle_timeout: in a little while}", "setting session.idle_timeout: `in a little while` is not a duration"},
		{"trusted_proxies: 10.0.0.0/8", "setting trusted_proxies: takes a list, not a single value (line 1)"},
		{"addr: [127.0.0.1:80]", "setting addr: takes a single value, not a list (line 1)"},
		{svc("timeout: soon"), "setting services.crm.timeout: `soon` is not a duration"},
		{svc("retry: {max_attempts: 3, base: 1s, max: later}"), "setting services.crm.retry.max: `later` is not a duration"},
		{svc("retyr: {}"), "setting services.crm.retyr: there is no such setting (line 4)"},
		{"metrics: {access: maybe}", "setting metrics.access"},
		{"metrics: {access: token}", "setting metrics.token"},
		{strings.Replace(svc(""), "http://127.0.0.1:9000", "ftp://x", 1), "setting services.crm.base_url"},
		{svc("headers: {Authorization: 'Bearer ${SYNCDESK_NO_SUCH_VAR}'}"), "setting services.crm.headers.Authorization: environment variable SYNCDESK_NO_SUCH_VAR is not set"},
		// Go's HTTP client would refuse each of these at every send, and the
		// link fail with words that name no setting.
		{svc("headers: {Authorization: 'Bearer ${SYNCDESK_TEST_EMPTY}'}"), "setting services.crm.headers.Authorization: environment variable SYNCDESK_TEST_EMPTY is empty"},
		{svc("headers: {Authorization: 'Bearer ${SYNCDESK_TEST_FROM_FILE}'}"), "setting services.crm.headers.Authorization: the value holds characters a header cannot carry"},
		{svc("headers: {'X Key': x}"), `setting services.crm.headers.X Key: "X Key" is not an HTTP header name`},
		{svc("retry: {max_attempts: -1, base: 1s, max: 2s}"), "setting services.crm.retry.max_attempts"},
		{strings.Replace(svc(""), "PUT /deals/{external_id}", "PUT /deals", 1), "setting services.crm.objects.order.update: the path needs {external_id}"},
		{strings.Replace(svc(""), "POST /deals", "FETCH /deals", 1), "setting services.crm.objects.order.create"},
		{strings.Replace(svc(""), "site_order_{local_id}", "site_order", 1), "needs {local_id}"},
		{svc("webhook: {scheme: paypal, secrets: [k]}"), `setting services.crm.webhook.scheme: "paypal" is not stripe, standard, github, shopify, hubspot or hmac`},
		{svc("webhook: {scheme: hubspot, secrets: [k]}"), `setting services.crm.webhook.event_id: HubSpot sends a list of events`},
	} {
		_, err := Load(writeFile(t, tc.yaml), Overrides{})
		require.Error(t, err, tc.yaml)
		require.Contains(t, err.Error(), tc.want, tc.yaml)
	}
}

func TestMissingFileIsAnError(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"), Overrides{})
	require.ErrorContains(t, err, "nope.yaml")
}

func TestEveryWebhookSchemeLoads(t *testing.T) {
	for _, scheme := range []string{"stripe", "standard", "github", "shopify"} {
		cfg, err := Load(writeFile(t, svc("webhook: {scheme: "+scheme+", secrets: [new, old]}")), Overrides{})
		require.NoError(t, err, scheme)
		require.Equal(t, scheme, cfg.Services["crm"].Webhook.Scheme)
	}
}

// svc is a valid service in YAML with one extra line.
func svc(extra string) string {
	return `services:
  crm:
    base_url: http://127.0.0.1:9000
    ` + extra + `
    objects:
      order:
        external_key: "site_order_{local_id}"
        create: POST /deals
        update: PUT /deals/{external_id}
        lookup: GET /deals?external_key={external_key}
`
}

func TestServicesGetDefaultsAndRoutes(t *testing.T) {
	t.Setenv("CRM_TOKEN", "abc")
	cfg, err := Load(writeFile(t, svc("headers: {Authorization: 'Bearer ${CRM_TOKEN}'}")), Overrides{})
	require.NoError(t, err)
	s := cfg.Services["crm"]
	require.Equal(t, "http", s.Kind)
	require.Equal(t, 6, s.Retry.MaxAttempts)
	require.Equal(t, 10*time.Second, s.Timeout)
	o := s.Objects["order"]
	require.Equal(t, "external_key", o.KeyField)
	require.Equal(t, "id", o.IDField)
	require.Equal(t, "order", o.Remote)
	require.Equal(t, []string{"crm"}, cfg.Routes("order"))
	require.Empty(t, cfg.Routes("invoice"))
	require.Equal(t, "Bearer ${CRM_TOKEN}", s.Headers["Authorization"], "the secret is expanded only in memory, by the connector")
}

// A base_url written with a trailing slash is the same base: endpoint
// paths, which start with "/", are not sent as //deals.
func TestABaseURLsTrailingSlashIsDropped(t *testing.T) {
	cfg, err := Load(writeFile(t, strings.Replace(svc(""), "http://127.0.0.1:9000", "http://127.0.0.1:9000/api/", 1)), Overrides{})
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:9000/api", cfg.Services["crm"].BaseURL)
}

func TestComparedFields(t *testing.T) {
	o := Object{KeyField: "external_key", IDField: "id"}
	payload := map[string]any{"title": "x", "amount": 1, "external_key": "k", "id": "d1"}
	require.Equal(t, []string{"amount", "title"}, o.ComparedFields(nil, payload), "all but the key and id, sorted")
	compare := []string{"title", "amount"}
	require.Equal(t, []string{"amount", "title"}, o.ComparedFields(compare, payload), "the configured ones, sorted")
	require.Equal(t, []string{"title", "amount"}, compare, "the configuration's list is left as it is")
	require.Equal(t, []string{"amount", "title"}, Object{}.ComparedFields(nil, payload), "the default key and id fields")
}

// The demo is what `go run .` shows with nothing configured; a file that
// asks for it beside services is refused, not silently replaced.
func TestDemoIsChosenOnlyWithNothingConfigured(t *testing.T) {
	cfg, err := Read("", Overrides{})
	require.NoError(t, err)
	require.True(t, cfg.Demo, "no file, no services: the demo")

	cfg, err = Read(writeFile(t, "addr: 127.0.0.1:7000\n"), Overrides{})
	require.NoError(t, err)
	require.False(t, cfg.Demo, "a file that configures no services is not the demo")

	p := writeFile(t, "demo: true\nservices:\n  erp:\n    base_url: https://erp.example.com\n"+
		"    objects:\n      order:\n        create: POST /orders\n        update: PUT /orders/{external_id}\n")
	_, err = Read(p, Overrides{})
	require.ErrorContains(t, err, "setting demo")
	_, err = Load(p, Overrides{})
	require.ErrorContains(t, err, "setting demo")
}

// The certificate and key are read at start: a missing file, or a key that
// is not the certificate's, stops it naming tls, before anything is sent or
// "running at https://…" is said; a good pair loads.
func TestTLSFilesAreReadAtStart(t *testing.T) {
	dir := t.TempDir()
	certPEM, keyPEM := selfSigned(t)
	_, otherKey := selfSigned(t)
	for name, body := range map[string][]byte{"cert.pem": certPEM, "key.pem": keyPEM, "other.pem": otherKey} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), body, 0o600))
	}
	tlsYAML := func(cert, key string) string {
		return fmt.Sprintf("tls: {cert_file: %q, key_file: %q}\n", filepath.Join(dir, cert), filepath.Join(dir, key))
	}
	_, err := Load(writeFile(t, tlsYAML("missing.pem", "key.pem")), Overrides{})
	require.ErrorContains(t, err, "setting tls: cert_file and key_file do not load as a certificate and its key: open ")
	_, err = Load(writeFile(t, tlsYAML("cert.pem", "other.pem")), Overrides{})
	require.ErrorContains(t, err, "setting tls: cert_file and key_file do not load as a certificate and its key: tls: private key does not match public key")
	cfg, err := Load(writeFile(t, tlsYAML("cert.pem", "key.pem")), Overrides{})
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "cert.pem"), cfg.TLS.CertFile)
}

// selfSigned makes a certificate for localhost and its key, in PEM.
func selfSigned(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// A value of the wrong kind is named by its setting, and a string setting's
// value is not repeated: it may be a secret put in the wrong place.
func TestAMistypedSecretIsNotPrinted(t *testing.T) {
	_, err := Load(writeFile(t, svc("webhook: {scheme: stripe, secrets: whsec_topsecret}")), Overrides{})
	require.ErrorContains(t, err, "setting services.crm.webhook.secrets: takes a list, not a single value (line 4)")
	require.NotContains(t, err.Error(), "whsec")
}
