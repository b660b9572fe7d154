/**
 * Metadata-only informers (client-go metadatainformer) against the real apiserver: LIST (or
 * WatchList) and WATCH asked for as PartialObjectMetadata, so the informer holds each object's
 * metadata and nothing of its data; changes and deletions arrive as with a full informer.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import type { V1PartialObjectMetadata } from '../../../src/library/informer.ts';
import { configMaps, isDeletedFinalStateUnknown, newSharedInformerFactory } from '../../../src/library/informer.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube } from '../../helpers/kube.ts';

const shared = useSharedAdmin();

for (const useWatchList of [true, false]) {
  test(`metadata informer (${useWatchList ? 'WatchList' : 'LIST + WATCH'}): PartialObjectMetadata objects, no data; updates and deletions arrive`, async (t) => {
    const namespace = await testNamespace(t, shared.admin);
    const path = `/api/v1/namespaces/${namespace}/configmaps`;
    const big = 'x'.repeat(10_000);
    for (const name of ['a', 'b']) {
      await kube(shared.admin, 'POST', path, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, labels: { app: name } },
        data: { big },
      });
    }
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(shared.cp.kubeconfig);
    const factory = newSharedInformerFactory({ kubeConfig, useWatchList });
    t.after(() => factory.shutdown());
    const informer = factory.metadataInformerFor({ ...configMaps, namespace });
    const full = factory.informerFor({ ...configMaps, namespace });
    assert.notEqual(informer, full, 'a scope of its own beside the full informer');
    const updates: V1PartialObjectMetadata[] = [];
    const deleted: string[] = [];
    informer.addEventHandler({
      onUpdate: (_old, obj) => {
        updates.push(obj);
      },
      onDelete: (obj) => {
        deleted.push(isDeletedFinalStateUnknown(obj) ? obj.key : (obj.metadata?.name ?? ''));
      },
    });
    factory.start();
    await factory.waitForCacheSync();

    const indexer = informer.getIndexer();
    assert.deepEqual(indexer.listKeys().sort(), [`${namespace}/a`, `${namespace}/b`]);
    const a = indexer.getByKey(`${namespace}/a`);
    assert.ok(a !== undefined);
    assert.equal(a.kind, 'PartialObjectMetadata');
    assert.equal(a.apiVersion, 'meta.k8s.io/v1');
    assert.deepEqual(a.metadata?.labels, { app: 'a' });
    assert.ok(a.metadata.creationTimestamp instanceof Date);
    assert.equal((a as Record<string, unknown>)['data'], undefined, 'no data: metadata only');
    assert.equal(full.getIndexer().getByKey(`${namespace}/a`)?.data?.['big'], big, 'the full informer has it');

    await kube(shared.admin, 'PATCH', `${path}/a`, { metadata: { labels: { app: 'a2' } } });
    await kube(shared.admin, 'DELETE', `${path}/b`);
    await eventually('the update and the deletion', () => updates.length === 1 && deleted.length === 1);
    assert.equal(updates[0]?.kind, 'PartialObjectMetadata', 'watch events are metadata only too');
    assert.deepEqual(updates[0].metadata?.labels, { app: 'a2' });
    assert.deepEqual(deleted, ['b']);
    assert.deepEqual(indexer.listKeys(), [`${namespace}/a`]);
  });
}
