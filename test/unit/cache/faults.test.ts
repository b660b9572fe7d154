import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newFaults } from '../../../src/cache/faults.ts';
import type { FaultSite } from '../../../src/cache/faults.ts';
import { newWatchCache } from '../../../src/cache/watch-cache.ts';
import { selectableFieldsFor } from '../../../src/cache/selectable-fields.ts';
import { decodeObject } from '../../../src/informer/object.ts';
import { CONFIGMAPS } from '../../helpers/resource-specs.ts';

function recorded(): { faults: ReturnType<typeof newFaults>; counted: string[]; logged: string[] } {
  const counted: string[] = [];
  const logged: string[] = [];
  const faults = newFaults({
    count: (site: FaultSite, resource: string) => counted.push(`${site} ${resource}`),
    log: (_message, fields) => logged.push(`${String(fields['site'])} ${String(fields['resource'])}`),
  });
  return { faults, counted, logged };
}

test('faults: every failure is counted; each site and type is logged once', () => {
  const { faults, counted, logged } = recorded();
  faults.report('watcher', 'pods', new Error('a'));
  faults.report('watcher', 'pods', new Error('b'));
  faults.report('watcher', 'configmaps', new Error('c'));
  faults.report('write-observer', 'pods', new Error('d'));
  assert.deepEqual(counted, ['watcher pods', 'watcher pods', 'watcher configmaps', 'write-observer pods']);
  assert.deepEqual(logged, ['watcher pods', 'watcher configmaps', 'write-observer pods']);
});

test("faults: a watch cache listener's failure is reported, and the other listeners and the cache go on", () => {
  const { faults, counted, logged } = recorded();
  const cache = newWatchCache({ spec: CONFIGMAPS, fields: selectableFieldsFor('', 'configmaps', true), faults });
  const seen: bigint[] = [];
  cache.addListener({
    event: () => {
      throw new Error('a broken listener');
    },
    replaced: () => undefined,
  });
  cache.addListener({ event: (e) => seen.push(e.resourceVersion), replaced: () => undefined });
  const cm = (name: string, rv: number): ReturnType<typeof decodeObject> =>
    decodeObject(
      Buffer.from(JSON.stringify({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { name, namespace: 'a', resourceVersion: String(rv) } })),
    );
  cache.store.replace([], '10');
  cache.store.add(cm('x', 11));
  cache.store.add(cm('y', 12));
  assert.deepEqual(seen, [11n, 12n], 'the other listener heard every change');
  assert.equal(cache.resourceVersion(), 12n);
  assert.deepEqual(counted, ['watch-cache-listener configmaps', 'watch-cache-listener configmaps']);
  assert.deepEqual(logged, ['watch-cache-listener configmaps']);
  cache.close();
});
