/**
 * A kubeconfig (clientcmd's v1 Config, JSON) that sends no credential to a plain-HTTP `server`:
 * a sidecar-mode proxy on loopback, as the Go clients of the tests and the bench reach it.
 */
export function anonymousKubeconfig(server: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'proxy', cluster: { server } }],
    users: [{ name: 'proxy', user: {} }],
    contexts: [{ name: 'proxy', context: { cluster: 'proxy', user: 'proxy' } }],
    'current-context': 'proxy',
  });
}
