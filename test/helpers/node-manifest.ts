/** What deploy/node gives its proxy's container (node-resources.yaml), for the bench and tests that run a node proxy as configured there. */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { load } from 'js-yaml';
import { parseMemoryQuantity } from '../../src/cli/proxy-options.ts';

const NODE_RESOURCES = fileURLToPath(new URL('../../deploy/node/node-resources.yaml', import.meta.url));

/** The node proxy container's memory request and limit, in bytes. */
export function nodeProxyMemory(): { readonly requestBytes: number; readonly limitBytes: number } {
  const patch = load(readFileSync(NODE_RESOURCES, 'utf8')) as {
    spec: {
      template: { spec: { containers: { name: string; resources?: { requests?: { memory?: string }; limits?: { memory?: string } } }[] } };
    };
  };
  const proxy = patch.spec.template.spec.containers.find((c) => c.name === 'kube-cache-proxy');
  const request = proxy?.resources?.requests?.memory;
  const limit = proxy?.resources?.limits?.memory;
  const requestBytes = request === undefined ? undefined : parseMemoryQuantity(request);
  const limitBytes = limit === undefined ? undefined : parseMemoryQuantity(limit);
  if (requestBytes === undefined || limitBytes === undefined)
    throw new Error(`${NODE_RESOURCES}: no memory request and limit for kube-cache-proxy`);
  return { requestBytes, limitBytes };
}
