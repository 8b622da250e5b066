// Package docs carries what of the documentation the broker serves: the
// OpenAPI description of its HTTP API (openapi.yaml, beside the prose in
// api.md), built into the binary so that GET /api/v1/openapi.yaml answers
// the description of the very build that serves it.
package docs

import _ "embed"

// OpenAPI is docs/openapi.yaml, OpenAPI 3.1.
//
//go:embed openapi.yaml
var OpenAPI []byte
