import { fileURLToPath } from 'node:url';

/**
 * The control plane the tests and `npm start` run against. Bump both here and in the Go modules
 * under tools/controlplane/ (go.mod + go.sum), then README.md and docs/contributing.md.
 *
 * Kubernetes: the newest release that builds with the machine's Go 1.26.
 * etcd: 3.7, the default of kubeadm for Kubernetes 1.37. Debian's etcd 3.4.23 is too old: the
 * apiserver then disables RequestWatchProgress (storage/feature/feature_support_checker.go), so
 * consistent LISTs skip the watch cache and WatchList is refused, unlike a real cluster.
 */
export const KUBERNETES_VERSION = 'v1.37.2';
export const ETCD_VERSION = '3.7.3';

/** The Go modules that pin the control plane; their go.mod/go.sum key the binary cache. */
export const CONTROL_PLANE_MODULES_DIR = fileURLToPath(new URL('../../../tools/controlplane/', import.meta.url));
