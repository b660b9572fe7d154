import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { request } from 'undici';
import { newConsistencyPolicy } from '../../../../src/cache/consistency.ts';
import { newReadYourWrites } from '../../../../src/cache/read-your-writes.ts';
import { delegatorFactory } from '../../../../src/cache/delegator.ts';
import { selectableFieldsFor } from '../../../../src/cache/selectable-fields.ts';
import { newWatchCache } from '../../../../src/cache/watch-cache.ts';
import { decodeObject } from '../../../../src/informer/object.ts';
import { serveWatch } from '../../../../src/server/serving/cached-watch.ts';
import { parseListOptions } from '../../../../src/request/list-options.ts';
import { parseRequest } from '../../../../src/request/parsed-request.ts';
import { FakeClock } from '../../../helpers/fake-clock.ts';
import { newFakeUpstream } from '../../../helpers/fake-upstream-client.ts';
import { CONFIGMAPS } from '../../../helpers/resource-specs.ts';

test("cached watch: from before the cache's first list (a restarted proxy), the cache's own 410 at once, byte for byte the apiserver's after its restart", async (t) => {
  const clock = new FakeClock();
  const cache = newWatchCache({ spec: CONFIGMAPS, fields: selectableFieldsFor('', 'configmaps', true), clock });
  const cm = decodeObject(
    Buffer.from(JSON.stringify({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'a', namespace: 'n', resourceVersion: '90' } })),
  );
  cache.store.replace([cm], '100');
  cache.store.watchConnected?.(true);
  const delegator = delegatorFactory({
    client: newFakeUpstream().client,
    policy: newConsistencyPolicy(),
    writes: newReadYourWrites(),
    clock,
  })(cache);
  const decisions: string[] = [];
  const server = createServer((req, res) => {
    const parsed = parseRequest('GET', req.url ?? '');
    const info = parsed.info;
    assert.ok(info !== undefined);
    void serveWatch({
      delegator,
      namespace: info.namespace,
      options: parseListOptions(parsed.query()),
      res,
    }).then((decision) => {
      decisions.push(decision);
      if (decision === 'cache') return;
      res.writeHead(299);
      res.end('to the apiserver');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.close();
    cache.close();
  });
  const url = `http://127.0.0.1:${String((server.address() as AddressInfo).port)}/api/v1/configmaps?watch=1&resourceVersion=50`;
  const young = await request(url);
  assert.equal(young.statusCode, 200);
  assert.equal(
    await young.body.text(),
    '{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 50 (100)","reason":"Expired","code":410}}\n',
  );
  assert.deepEqual(decisions, ['cache']);
});
