//go:build tools

// Package tools pins the main package this module builds (see go.mod).
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
