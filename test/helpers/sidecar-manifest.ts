/** What deploy/sidecar/sidecar.yaml gives the proxy's container, for the tests and the bench that run it as configured there. */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { load } from 'js-yaml';
import { parseMemoryQuantity } from '../../src/cli/proxy-options.ts';

const SIDECAR = fileURLToPath(new URL('../../deploy/sidecar/sidecar.yaml', import.meta.url));

interface Resources {
  readonly requests: { readonly memory: string };
  readonly limits: { readonly memory: string };
}

/** The kube-cache-proxy container's memory request and limit, in bytes. */
export function sidecarMemory(): { readonly requestBytes: number; readonly limitBytes: number } {
  const manifest = load(readFileSync(SIDECAR, 'utf8')) as {
    spec: { template: { spec: { initContainers: { name: string; resources: Resources }[] } } };
  };
  const proxy = manifest.spec.template.spec.initContainers.find((c) => c.name === 'kube-cache-proxy');
  const requestBytes = proxy === undefined ? undefined : parseMemoryQuantity(proxy.resources.requests.memory);
  const limitBytes = proxy === undefined ? undefined : parseMemoryQuantity(proxy.resources.limits.memory);
  if (requestBytes === undefined || limitBytes === undefined)
    throw new Error(`${SIDECAR}: no memory request and limit for kube-cache-proxy`);
  return { requestBytes, limitBytes };
}
