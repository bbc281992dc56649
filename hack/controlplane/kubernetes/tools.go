//go:build tools

// Package tools pins the main packages this module builds, so that `go mod tidy` keeps every
// module they need in go.mod and go.sum. Nothing here is compiled into a binary of ours.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
