/**
 * Small helpers for integration tests that write to the real apiserver through the project's
 * own upstream client.
 */
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import type { UpstreamClient } from '../../src/upstream/client.ts';
import { eventually } from './eventually.ts';

export interface Meta {
  readonly name: string;
  readonly namespace?: string;
  readonly resourceVersion: string;
  readonly uid: string;
}

/** Sends a JSON request and returns the parsed body; throws unless the status is `expect`. */
export async function kube<T = { metadata: Meta }>(
  client: UpstreamClient,
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  path: string,
  body?: unknown,
  expect: number | readonly number[] = [200, 201],
): Promise<T> {
  const res = await client.request({
    method,
    path,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    ...(method === 'PATCH' ? { headers: { 'content-type': 'application/merge-patch+json' } } : {}),
  });
  const wanted = typeof expect === 'number' ? [expect] : expect;
  if (!wanted.includes(res.statusCode)) throw new Error(`${method} ${path}: ${res.statusCode} ${res.body.toString().slice(0, 300)}`);
  return JSON.parse(res.body.toString()) as T;
}

/** Runs `fn` over `items` with at most `concurrency` at a time. */
export async function forEachConcurrently<T>(
  items: readonly T[],
  concurrency: number,
  fn: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      await fn(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}

export interface TestCrd {
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  readonly kind: string;
}

/**
 * A namespaced CustomResourceDefinition of the test's own: its resource name is unique, so the
 * apiserver's per-resource request metrics count only this test's requests. Deleted at the end.
 */
export async function testCrd(t: TestContext, client: UpstreamClient): Promise<TestCrd> {
  const suffix = randomBytes(3).toString('hex');
  const crd: TestCrd = { group: 'kcp.test', version: 'v1', plural: `widgets${suffix}`, kind: `Widget${suffix}` };
  const name = `${crd.plural}.${crd.group}`;
  await kube(client, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name },
    spec: {
      group: crd.group,
      scope: 'Namespaced',
      names: { plural: crd.plural, singular: crd.plural.slice(0, -1), kind: crd.kind, listKind: `${crd.kind}List` },
      versions: [
        {
          name: crd.version,
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } },
          },
        },
      ],
    },
  });
  t.after(async () => {
    await client.request({ method: 'DELETE', path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}` });
  });
  await eventually(`CRD ${name} to be served`, async () => {
    const res = await client.request({ method: 'GET', path: `/apis/${crd.group}/${crd.version}/${crd.plural}` });
    return res.statusCode === 200;
  });
  return crd;
}

/** The apiserver's own count of requests (apiserver_request_total) for a verb and resource. */
export async function apiserverRequests(client: UpstreamClient, verb: string, resource: string): Promise<number> {
  const res = await client.request({ method: 'GET', path: '/metrics', headers: { accept: 'text/plain' } });
  let total = 0;
  for (const line of res.body.toString().split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    if (!line.includes(`verb="${verb}"`) || !line.includes(`resource="${resource}"`)) continue;
    total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

/** A ServiceAccount of the test's own and a token for it (TokenRequest, one hour). */
export async function serviceAccountToken(admin: UpstreamClient, ns: string, name: string): Promise<string> {
  await kube(admin, 'POST', `/api/v1/namespaces/${ns}/serviceaccounts`, { metadata: { name } });
  const review = await kube<{ status: { token: string } }>(admin, 'POST', `/api/v1/namespaces/${ns}/serviceaccounts/${name}/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { expirationSeconds: 3600 },
  });
  return review.status.token;
}

/** Who a binding names: a user, a group, or a service account (in its namespace). */
export type Subject =
  | { readonly kind: 'User' | 'Group'; readonly name: string }
  | { readonly kind: 'ServiceAccount'; readonly name: string; readonly namespace: string };

/** A Role `name` in `ns` with `rules`, and a RoleBinding of it to `subject` (named after the subject). */
export async function grantInNamespace(
  admin: UpstreamClient,
  ns: string,
  name: string,
  rules: readonly { apiGroups: string[]; resources: string[]; verbs: string[] }[],
  subject: Subject,
): Promise<void> {
  const rbac = `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}`;
  await kube(admin, 'POST', `${rbac}/roles`, { metadata: { name }, rules });
  await kube(admin, 'POST', `${rbac}/rolebindings`, {
    metadata: { name: `${name}-${subject.name.replaceAll(':', '-').toLowerCase()}` },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: [subject.kind === 'ServiceAccount' ? subject : { ...subject, apiGroup: 'rbac.authorization.k8s.io' }],
  });
}
