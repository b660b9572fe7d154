/**
 * Chaining at scale of the deployment: a node proxy in shared mode (a process of its own) and
 * sidecar proxies in front of it, each with its own service account's token. However many
 * sidecars there are, the node proxy holds one upstream LIST and WATCH per type; the sidecars'
 * informers' watches land on the node proxy, answered from its cache; a client of a sidecar reads
 * what the apiserver holds, and sees changes made at the apiserver.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'undici';
import { loadUpstream } from '../../../src/proxy/upstream.ts';
import { startProxy } from '../../../src/proxy/proxy.ts';
import { parseProxyOptions } from '../../../src/cli/proxy-options.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube, serviceAccountToken } from '../../helpers/kube.ts';
import { clientFor, startSharedProxy } from '../../helpers/shared-proxy.ts';
import { metricSum } from '../../helpers/metrics-text.ts';
import { tokenKubeconfig } from '../../helpers/token-kubeconfig.ts';

const shared = useSharedAdmin();

/** The sidecars chained to one node proxy. */
const SIDECARS = 4;

test(
  `chain: ${String(SIDECARS)} sidecars in front of a shared node proxy cost the apiserver one LIST and one WATCH per type`,
  { timeout: 180_000 },
  async (t) => {
    const { admin, cp } = shared;
    const ns = await testNamespace(t, admin);
    await kube(admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'before' }, data: { n: '1' } });
    const node = await startSharedProxy(t, cp, ['--resources', 'configmaps,pods']);
    // The sidecars' own identity: a service account that may read what they cache, as deploy/rbac grants.
    const role = `kcp-sidecar-${ns}`;
    await kube(admin, 'POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', {
      metadata: { name: role },
      rules: [
        { apiGroups: [''], resources: ['configmaps', 'pods'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: ['apiregistration.k8s.io'], resources: ['apiservices'], verbs: ['get', 'list', 'watch'] },
      ],
    });
    await kube(admin, 'POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
      metadata: { name: role },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ kind: 'ServiceAccount', name: 'sidecar', namespace: ns }],
    });
    t.after(async () => {
      await admin.request({ method: 'DELETE', path: `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${role}` });
      await admin.request({ method: 'DELETE', path: `/apis/rbac.authorization.k8s.io/v1/clusterroles/${role}` });
    });
    const token = await serviceAccountToken(admin, ns, 'sidecar');
    const sa = clientFor(t, node.ca, { kind: 'token', token });
    await eventually('the grant to be in force', async () => {
      const res = await request(`${cp.server}/api/v1/configmaps?limit=1`, { dispatcher: sa.dispatcher, headers: sa.headers });
      await res.body.dump();
      return res.statusCode === 200;
    });

    const kubeconfig = tokenKubeconfig(t, cp, token);
    const sidecars = [];
    for (let i = 0; i < SIDECARS; i++) {
      // As deployed: the sidecar's kubeconfig names the apiserver and its service account's
      // token; --server and --certificate-authority point it at the node proxy instead.
      const options = parseProxyOptions([
        ...['--kubeconfig', kubeconfig, '--server', node.url, '--certificate-authority', cp.caFile],
        ...['--port', '0', '--resources', 'configmaps,pods', '--log-level', 'warn'],
      ]);
      const running = await startProxy(options, await loadUpstream(options));
      t.after(() => running.stop(0));
      sidecars.push(running);
    }
    for (const sidecar of sidecars) {
      await eventually('the sidecar caches to sync', async () => {
        const res = await request(`${sidecar.url ?? ''}/readyz`);
        await res.body.dump();
        return res.statusCode === 200;
      });
    }

    // A change at the apiserver reaches each sidecar's client through the node proxy.
    await kube(admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'after' }, data: { n: '2' } });
    const expected = (
      await kube<{ items: { metadata: { name: string } }[] }>(admin, 'GET', `/api/v1/namespaces/${ns}/configmaps`)
    ).items.map((i) => i.metadata.name);
    assert.deepEqual(expected, ['after', 'before']);
    for (const sidecar of sidecars) {
      await eventually('the change to reach the sidecar', async () => {
        const res = await request(`${sidecar.url ?? ''}/api/v1/namespaces/${ns}/configmaps?resourceVersion=0`);
        const list = (await res.body.json()) as { items: { metadata: { name: string } }[] };
        return JSON.stringify(list.items.map((i) => i.metadata.name)) === JSON.stringify(expected);
      });
    }

    const metrics = await request(`${node.url}/metrics`, {
      dispatcher: clientFor(t, node.ca, { kind: 'token', token: cp.users.admin.token }).dispatcher,
      headers: { authorization: `Bearer ${cp.users.admin.token}` },
    });
    const text = await metrics.body.text();
    assert.equal(metrics.statusCode, 200, text.slice(0, 300));
    for (const resource of ['configmaps', 'pods']) {
      // Upstream: one LIST and one WATCH of the type, for any number of sidecars.
      assert.equal(metricSum(text, 'kube_cache_proxy_reflector_lists_total', { resource }), 1, `${resource}: node proxy LISTs upstream`);
      assert.equal(
        metricSum(text, 'kube_cache_proxy_reflector_watches_total', { resource }),
        1,
        `${resource}: node proxy WATCHes upstream`,
      );
      // Downstream: every sidecar's informer watch answered from the node proxy's cache, none passed through.
      assert.ok(
        metricSum(text, 'kube_cache_proxy_requests_total', { verb: 'watch', resource, served_from: 'cache' }) >= SIDECARS,
        `${resource}: sidecar watches served from the node cache`,
      );
      assert.equal(
        metricSum(text, 'kube_cache_proxy_requests_total', { verb: 'watch', resource, served_from: 'apiserver' }),
        0,
        `${resource}: watches passed through`,
      );
      assert.equal(
        metricSum(text, 'kube_cache_proxy_requests_total', { verb: 'list', resource, served_from: 'apiserver' }),
        0,
        `${resource}: lists passed through`,
      );
    }
    // The sidecars before the node proxy (whose hook came first): their watches end quietly.
    await Promise.all(sidecars.map((s) => s.stop(0)));
  },
);
