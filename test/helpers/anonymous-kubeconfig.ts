/**
 * A kubeconfig (clientcmd's v1 Config, JSON) that sends no credential to `server`: a sidecar-mode
 * proxy on loopback, as the Go clients of the tests and the bench reach it; over HTTPS, trusting
 * the CA of `caFile`.
 */
export function anonymousKubeconfig(server: string, caFile?: string): string {
  const trust = caFile === undefined ? {} : { 'certificate-authority': caFile };
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'proxy', cluster: { server, ...trust } }],
    users: [{ name: 'proxy', user: {} }],
    contexts: [{ name: 'proxy', context: { cluster: 'proxy', user: 'proxy' } }],
    'current-context': 'proxy',
  });
}
