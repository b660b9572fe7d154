/**
 * Who takes part in the hostile-client suite, made in the cluster by the admin:
 *
 * - the proxy's own identity: deploy/shared-rbac's ServiceAccount, ClusterRole and binding, as a
 *   node or cluster proxy runs (its TokenReviews and SubjectAccessReviews are then spent from a
 *   ServiceAccount's API Priority and Fairness share, as in a cluster, not system:masters');
 * - good clients: a ServiceAccount each (a TokenRequest token), spread over the good namespaces,
 *   each namespace with a Role to read its pods and ConfigMaps bound to its clients by name (so
 *   that no other account of the namespace shares the grant), and a few ConfigMaps to read;
 * - attackers, in the attacker's namespace: `hostile-none`, with no rights at all, and
 *   `hostile`, which may read that namespace's Services and write through its pods' proxy
 *   (what a tenant of a shared cluster may be given); the Services the attacks read.
 *
 * Cluster-scoped objects carry `suffix` and are removed by `remove()`; namespaces are left to the
 * caller (the suite's control plane goes away with it, a test deletes its namespace).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load, loadAll } from 'js-yaml';
import { Agent, request } from 'undici';
import type { ControlPlaneState } from '../../src/cli/dev-cluster/control-plane.ts';
import type { UpstreamClient } from '../../src/upstream/client.ts';
import { eventually } from '../../test/helpers/eventually.ts';
import { forEachConcurrently, kube } from '../../test/helpers/kube.ts';

export interface GoodClient {
  readonly name: string;
  readonly namespace: string;
  readonly token: string;
}

export interface Tenants {
  /** The proxy's ServiceAccount token (deploy/shared-rbac). */
  readonly proxyToken: string;
  readonly good: readonly GoodClient[];
  readonly goodNamespaces: readonly string[];
  /** ConfigMaps each good namespace holds (cm-0, cm-1, ...). */
  readonly configMaps: number;
  readonly attackNamespace: string;
  /** A ServiceAccount with no rights at all. */
  readonly noRightsToken: string;
  /** The attacker with a tenant's rights in its namespace: read Services, write through pods' proxy. */
  readonly attackerToken: string;
  /** Services in the attacker's namespace (svc-0000, ...). */
  readonly services: number;
  /** Removes the cluster-scoped objects made (the ClusterRole and its binding). */
  remove(): Promise<void>;
}

export interface TenantsSpec {
  readonly admin: UpstreamClient;
  /** Where the good clients live, in turn (client i in goodNamespaces[i % length]); they exist already. */
  readonly goodNamespaces: readonly string[];
  /** Where the attackers and the proxy's ServiceAccount live; it exists already (may be a good one too). */
  readonly attackNamespace: string;
  readonly clients: number;
  readonly services: number;
  /** Names cluster-scoped objects apart from another run's on the same cluster. */
  readonly suffix: string;
  readonly progress?: (line: string) => void;
}

const SHARED_RBAC = join(import.meta.dirname, '..', '..', 'deploy', 'shared-rbac');
/** A cluster proxy's reads (deploy/cluster/reads.yaml): pods, ConfigMaps and Services among them, what the suite's proxy caches. */
const CLUSTER_READS = join(import.meta.dirname, '..', '..', 'deploy', 'cluster', 'reads.yaml');
const CONFIG_MAPS = 5;
/** Long enough for any run: TokenRequest's own cap is the apiserver's --service-account-max-token-expiration. */
const TOKEN_SECONDS = 86_400;
const GOOD_ROLE = 'hostile-good-reader';
const ATTACKER_ROLE = 'hostile-tenant';
/** Parallel setup requests: enough to make 50 identities in seconds, few enough for 2 cores. */
const CONCURRENCY = 8;

export function serviceName(i: number): string {
  return `svc-${String(i).padStart(4, '0')}`;
}

export function configMapName(i: number): string {
  return `cm-${String(i)}`;
}

async function token(admin: UpstreamClient, namespace: string, name: string): Promise<string> {
  await kube(admin, 'POST', `/api/v1/namespaces/${namespace}/serviceaccounts`, { metadata: { name } }, [201, 409]);
  const review = await kube<{ status: { token: string } }>(admin, 'POST', `/api/v1/namespaces/${namespace}/serviceaccounts/${name}/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { expirationSeconds: TOKEN_SECONDS },
  });
  return review.status.token;
}

interface RbacObject {
  readonly kind: string;
  readonly metadata: { name: string };
  readonly roleRef?: { name: string };
  readonly subjects?: { kind: string; name: string; namespace?: string }[];
}

/**
 * deploy/shared-rbac and a cluster proxy's reads as applied in `namespace`: the ServiceAccount,
 * the ClusterRoles and their bindings, names suffixed.
 */
async function proxyIdentity(
  admin: UpstreamClient,
  namespace: string,
  suffix: string,
): Promise<{ token: string; clusterScoped: string[] }> {
  const objects = [join(SHARED_RBAC, 'cluster-role.yaml'), CLUSTER_READS].flatMap(
    (file) => loadAll(readFileSync(file, 'utf8')) as RbacObject[],
  );
  const account = (load(readFileSync(join(SHARED_RBAC, 'service-account.yaml'), 'utf8')) as RbacObject).metadata.name;
  const clusterScoped: string[] = [];
  for (const object of objects) {
    const name = `${object.metadata.name}-${suffix}`;
    const renamed = {
      ...object,
      metadata: { ...object.metadata, name },
      ...(object.roleRef === undefined ? {} : { roleRef: { ...object.roleRef, name: `${object.roleRef.name}-${suffix}` } }),
      ...(object.subjects === undefined ? {} : { subjects: object.subjects.map((s) => ({ ...s, namespace })) }),
    };
    const plural = object.kind === 'ClusterRole' ? 'clusterroles' : 'clusterrolebindings';
    await kube(admin, 'POST', `/apis/rbac.authorization.k8s.io/v1/${plural}`, renamed);
    clusterScoped.push(`/apis/rbac.authorization.k8s.io/v1/${plural}/${name}`);
  }
  return { token: await token(admin, namespace, account), clusterScoped };
}

export async function makeTenants(spec: TenantsSpec): Promise<Tenants> {
  const { admin, attackNamespace } = spec;
  const log = spec.progress ?? ((): void => undefined);
  const rbac = (namespace: string): string => `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}`;
  const proxy = await proxyIdentity(admin, attackNamespace, spec.suffix);
  const remove = async (): Promise<void> => {
    for (const path of proxy.clusterScoped.reverse()) await admin.request({ method: 'DELETE', path });
  };
  try {
    const good = Array.from({ length: spec.clients }, (_, i) => ({
      name: `good-${String(i).padStart(3, '0')}`,
      namespace: spec.goodNamespaces[i % spec.goodNamespaces.length] ?? '',
    }));
    const tokens = new Array<string>(good.length);
    let made = 0;
    await forEachConcurrently(good, CONCURRENCY, async (client, i) => {
      tokens[i] = await token(admin, client.namespace, client.name);
      if (++made % 10 === 0) log(`${String(made)}/${String(good.length)} good identities`);
    });
    for (const namespace of spec.goodNamespaces) {
      await kube(admin, 'POST', `${rbac(namespace)}/roles`, {
        metadata: { name: GOOD_ROLE },
        rules: [{ apiGroups: [''], resources: ['pods', 'configmaps'], verbs: ['get', 'list', 'watch'] }],
      });
      await kube(admin, 'POST', `${rbac(namespace)}/rolebindings`, {
        metadata: { name: GOOD_ROLE },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: GOOD_ROLE },
        subjects: good.filter((c) => c.namespace === namespace).map((c) => ({ kind: 'ServiceAccount', name: c.name, namespace })),
      });
      for (let i = 0; i < CONFIG_MAPS; i++) {
        await kube(admin, 'POST', `/api/v1/namespaces/${namespace}/configmaps`, {
          metadata: { name: configMapName(i), labels: { app: 'hostile-good' } },
          data: { setting: `value-${String(i)}` },
        });
      }
    }
    const noRightsToken = await token(admin, attackNamespace, 'hostile-none');
    const attackerToken = await token(admin, attackNamespace, 'hostile');
    await kube(admin, 'POST', `${rbac(attackNamespace)}/roles`, {
      metadata: { name: ATTACKER_ROLE },
      rules: [
        { apiGroups: [''], resources: ['services'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: [''], resources: ['pods/proxy'], verbs: ['get', 'create', 'update', 'patch', 'delete'] },
      ],
    });
    await kube(admin, 'POST', `${rbac(attackNamespace)}/rolebindings`, {
      metadata: { name: ATTACKER_ROLE },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: ATTACKER_ROLE },
      subjects: [{ kind: 'ServiceAccount', name: 'hostile', namespace: attackNamespace }],
    });
    const services = Array.from({ length: spec.services }, (_, i) => i);
    await forEachConcurrently(services, CONCURRENCY, async (i) => {
      await kube(admin, 'POST', `/api/v1/namespaces/${attackNamespace}/services`, {
        metadata: { name: serviceName(i), labels: { app: 'hostile', tier: `t${String(i % 7)}` } },
        // Headless: no ClusterIP taken from the test cluster's small service range.
        spec: { clusterIP: 'None', selector: { app: serviceName(i) }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
      });
    });
    log(`${String(spec.services)} Services in ${attackNamespace}`);
    return {
      proxyToken: proxy.token,
      good: good.map((c, i) => ({ ...c, token: tokens[i] ?? '' })),
      goodNamespaces: spec.goodNamespaces,
      configMaps: CONFIG_MAPS,
      attackNamespace,
      noRightsToken,
      attackerToken,
      services: spec.services,
      remove,
    };
  } catch (error) {
    await remove();
    throw error;
  }
}

/**
 * Waits until the apiserver enforces the grants just made (its RBAC authorizer reads them from
 * its informers): a good client lists its pods, the attacker its Services, the proxy every pod.
 */
export async function waitForGrants(state: ControlPlaneState, tenants: Tenants): Promise<void> {
  const dispatcher = new Agent({ connect: { ca: readFileSync(state.caFile) } });
  const first = tenants.good[0];
  const probes: { token: string; path: string }[] = [
    ...(first === undefined ? [] : [{ token: first.token, path: `/api/v1/namespaces/${first.namespace}/pods` }]),
    { token: tenants.attackerToken, path: `/api/v1/namespaces/${tenants.attackNamespace}/services` },
    { token: tenants.proxyToken, path: '/api/v1/pods?limit=1' },
  ];
  try {
    for (const probe of probes) {
      await eventually(`the grant of ${probe.path} to be in force`, async () => {
        const res = await request(`${state.server}${probe.path}`, { dispatcher, headers: { authorization: `Bearer ${probe.token}` } });
        await res.body.dump();
        return res.statusCode === 200;
      });
    }
  } finally {
    await dispatcher.close();
  }
}
