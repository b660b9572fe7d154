/**
 * The library's typed resources (src/library/resources.ts, generated from client-go's informer
 * table) against the real apiserver: each one's group, version and plural name is served, with
 * the kind and scope the entry says and the list and watch verbs an informer needs; and an
 * informer of one, made with no type argument, lists and decodes its objects as its model.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KubeConfig, V1ConfigMap } from '@kubernetes/client-node';
import { builtInResources, configMaps, newSharedInformerFactory } from '../../../src/library/informer.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { kube } from '../../helpers/kube.ts';

const shared = useSharedAdmin();

interface ApiResource {
  readonly name: string;
  readonly kind: string;
  readonly namespaced: boolean;
  readonly verbs: readonly string[];
}

test('typed resources: every entry is served by the apiserver (discovery) as that kind, scope, with list and watch', async () => {
  const discovered = new Map<string, ApiResource[]>();
  const problems: string[] = [];
  for (const r of builtInResources) {
    const path = r.group === '' ? `/api/${r.version}` : `/apis/${r.group}/${r.version}`;
    let list = discovered.get(path);
    if (list === undefined) {
      list = (await kube<{ resources: ApiResource[] }>(shared.admin, 'GET', path)).resources;
      discovered.set(path, list);
    }
    const served = list.find((a) => a.name === r.resource);
    const where = `${r.resource}.${r.group}/${r.version}`;
    if (served === undefined) problems.push(`${where}: not served`);
    else {
      if (served.kind !== r.kind) problems.push(`${where}: kind ${served.kind}, entry says ${r.kind}`);
      if (served.namespaced !== r.namespaced) problems.push(`${where}: namespaced ${String(served.namespaced)}`);
      if (!served.verbs.includes('list') || !served.verbs.includes('watch')) problems.push(`${where}: verbs ${served.verbs.join(',')}`);
    }
  }
  assert.deepEqual(problems, []);
  assert.ok(builtInResources.length >= 50, `${String(builtInResources.length)} resources`);
});

test('typed resources: informerFor(configMaps) with no type argument lists V1ConfigMap objects', async (t) => {
  const namespace = await testNamespace(t, shared.admin);
  await kube(shared.admin, 'POST', `/api/v1/namespaces/${namespace}/configmaps`, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'typed' },
    data: { a: '1' },
  });
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(shared.cp.kubeconfig);
  const factory = newSharedInformerFactory({ kubeConfig });
  t.after(() => factory.shutdown());
  const informer = factory.informerFor({ ...configMaps, namespace });
  factory.start();
  await factory.waitForCacheSync();
  const read = informer.getIndexer().getByKey(`${namespace}/typed`);
  assert.ok(read instanceof V1ConfigMap, 'decoded as its client-node model');
  assert.equal(read.data?.['a'], '1');
  assert.ok(read.metadata?.creationTimestamp instanceof Date);
});
