/**
 * Read your writes with the library against the real apiserver (client-go 1.37: KEP-5647's
 * Store.LastStoreSyncResourceVersion with KEP-5504's CompareResourceVersion): once the Indexer's
 * resourceVersion is not older than a write's, the Indexer shows that write.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { compareResourceVersion, configMaps, newSharedInformerFactory } from '../../../src/library/informer.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube } from '../../helpers/kube.ts';

const shared = useSharedAdmin();

test("read your writes: onBookmark tells the handler the initial list's RV; when lastStoreSyncResourceVersion reaches a write's resourceVersion, the Indexer holds the write", async (t) => {
  const namespace = await testNamespace(t, shared.admin);
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(shared.cp.kubeconfig);
  const factory = newSharedInformerFactory({ kubeConfig });
  t.after(() => factory.shutdown());
  const informer = factory.informerFor({ ...configMaps, namespace });
  const bookmarks: string[] = [];
  informer.addEventHandler({ onBookmark: (rv) => void bookmarks.push(rv) });
  factory.start();
  await factory.waitForCacheSync();
  const indexer = informer.getIndexer();
  assert.notEqual(indexer.lastStoreSyncResourceVersion(), '', "synced: the list's resourceVersion");
  // The end of the initial list (a WatchList's bookmark) is told to the handler, at the Indexer's RV.
  await eventually('onBookmark at the end of the initial list', () => bookmarks.length > 0);
  assert.equal(bookmarks[0], indexer.lastStoreSyncResourceVersion());

  const path = `/api/v1/namespaces/${namespace}/configmaps`;
  for (let i = 0; i < 5; i++) {
    const written = await kube<{ metadata: { name: string; resourceVersion: string } }>(shared.admin, 'POST', path, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `rw-${String(i)}` },
      data: { i: String(i) },
    });
    const rv = written.metadata.resourceVersion;
    // Checked at every poll: whenever the store says it has reached rv, the write is there.
    await eventually(`the store to reach ${rv}`, () => {
      if (compareResourceVersion(indexer.lastStoreSyncResourceVersion(), rv) < 0) return false;
      assert.equal(indexer.getByKey(`${namespace}/rw-${String(i)}`)?.data?.['i'], String(i));
      return true;
    });
  }
});
