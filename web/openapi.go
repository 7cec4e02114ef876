package web

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"
	"gopkg.in/yaml.v3"
)

// openAPIYAML describes the JSON API. It is written as YAML, where comments
// and long descriptions read well, and served as JSON, which every client
// generator reads.
//
//go:embed openapi.yaml
var openAPIYAML []byte

// openAPIJSON is the embedded document as JSON, made once, at start.
func openAPIJSON() ([]byte, error) { return yamlToJSON(openAPIYAML) }

func yamlToJSON(src []byte) ([]byte, error) {
	var doc any
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("web/openapi.yaml: %w", err)
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("web/openapi.yaml as JSON (quote every status code): %w", err)
	}
	return out, nil
}

// serveOpenAPI answers GET /api/openapi.json: the document, open to all
// (it holds no secret), cacheable, and revalidated by its ETag, which
// changes only with the binary.
func serveOpenAPI() (echo.HandlerFunc, error) {
	doc, err := openAPIJSON()
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(doc)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Cache-Control", "public, max-age=3600")
		h.Set("ETag", etag)
		if c.Request().Header.Get("If-None-Match") == etag {
			return c.NoContent(http.StatusNotModified)
		}
		return c.JSONBlob(http.StatusOK, doc)
	}, nil
}
