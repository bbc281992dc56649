//go:build tools

// Package tools pins the main package this module builds (see go.mod).
package tools

import _ "helm.sh/helm/v3/cmd/helm"
