// Package static embeds the stylesheet, scripts and images served under /static/.
package static

import "embed"

// FS holds css/, js/ and img/. htmx is vendored from the npm registry at the
// version in its file name.
//
//go:embed css js img
var FS embed.FS
