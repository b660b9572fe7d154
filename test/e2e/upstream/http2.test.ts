/**
 * The upstream client's own requests over HTTP/2 against the real apiserver (undici's h2, the
 * default): watches share connections, past 100 streams a second connection opens rather than a
 * queue, a stream nobody reads holds back only itself, and a request head too large for Node's
 * HTTP/2 client still gets the apiserver's answer (over HTTP/1.1).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newUpstreamClient } from '../../../src/upstream/client.ts';
import type { UpstreamClient } from '../../../src/upstream/client.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { establishedTo } from '../../helpers/proc-sockets.ts';

const shared = useSharedAdmin();

/**
 * Opens `n` watches of configmaps in `ns`, each counting the ADDED events it reads (unread ones
 * count nothing), aborted when `t` ends (the client's close waits for requests in flight).
 */
async function openWatches(
  t: { after(fn: () => void): void },
  client: UpstreamClient,
  ns: string,
  n: number,
  read: boolean,
): Promise<{ added: number[] }> {
  const added = new Array<number>(n).fill(0);
  const abort = new AbortController();
  t.after(() => {
    abort.abort();
  });
  await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const res = await client.stream({
        method: 'GET',
        path: `/api/v1/namespaces/${ns}/configmaps?watch=1&timeoutSeconds=120`,
        signal: abort.signal,
      });
      assert.equal(res.statusCode, 200);
      if (!read) return;
      void (async () => {
        let tail = '';
        for await (const chunk of res.body) {
          const lines = (tail + String(chunk)).split('\n');
          tail = lines.pop() ?? '';
          added[i] = (added[i] ?? 0) + lines.filter((l) => l.startsWith('{"type":"ADDED"')).length;
        }
      })().catch(() => undefined);
    }),
  );
  return { added };
}

async function createConfigMap(admin: UpstreamClient, ns: string, name: string, value: string): Promise<void> {
  const res = await admin.request({
    method: 'POST',
    path: `/api/v1/namespaces/${ns}/configmaps`,
    body: JSON.stringify({ metadata: { name }, data: { v: value } }),
  });
  assert.equal(res.statusCode, 201, res.body.toString());
}

test('upstream over h2: 150 watches hold two connections, not 150, and every one sees the event', { timeout: 60_000 }, async (t) => {
  const { admin, cp } = shared;
  const ns = await testNamespace(t, admin);
  const config = await upstreamConfigFor(cp);
  const port = Number(config.server.port);
  const before = establishedTo('self', port);
  const client = newUpstreamClient({ ...config, http2: true });
  const { added } = await openWatches(t, client, ns, 150, true);
  // After the watches' abort: node:test runs a test's after hooks in the order they were added.
  t.after(() => client.close());
  // undici runs 100 streams on a connection and opens another for the rest.
  const connections = establishedTo('self', port) - before;
  assert.ok(connections >= 1 && connections <= 2, `connections for 150 watches over h2: ${String(connections)}`);
  await createConfigMap(admin, ns, 'one', 'v');
  await eventually('every watch to see the ADDED event', () => added.every((n) => n === 1), 20_000);
});

test('upstream over h2: a watch nobody reads stalls only itself, not the others on its connection', { timeout: 90_000 }, async (t) => {
  const { admin, cp } = shared;
  const ns = await testNamespace(t, admin);
  const client = newUpstreamClient({ ...(await upstreamConfigFor(cp)), http2: true });
  const { added } = await openWatches(t, client, ns, 5, true);
  // Opened after the read ones, on the same connection: 5 × 10 × 200 KB is far past their stream
  // windows and past the connection's own (512 KiB, undici's).
  await openWatches(t, client, ns, 5, false);
  t.after(() => client.close());
  const value = 'x'.repeat(200_000);
  for (let i = 0; i < 10; i++) await createConfigMap(admin, ns, `big-${String(i)}`, value);
  await eventually('the read watches to see all 10 objects', () => added.every((n) => n === 10), 30_000);
  const res = await client.request({ method: 'GET', path: `/api/v1/namespaces/${ns}/configmaps?limit=1` });
  assert.equal(res.statusCode, 200);
});

test("upstream over h2: a request head past Node's 64 KiB HTTP/2 limit gets the apiserver's answer", { timeout: 30_000 }, async (t) => {
  const { admin, cp } = shared;
  const ns = await testNamespace(t, admin);
  const client = newUpstreamClient({ ...(await upstreamConfigFor(cp)), http2: true });
  t.after(() => client.close());
  const values = Array.from({ length: 12_000 }, (_, i) => `v${String(i)}`).join(',');
  const path = `/api/v1/namespaces/${ns}/configmaps?labelSelector=${encodeURIComponent(`app in (${values})`)}`;
  assert.ok(path.length > 70_000);
  const res = await client.request({ method: 'GET', path });
  assert.equal(res.statusCode, 200, res.body.toString().slice(0, 300));
  assert.deepEqual((JSON.parse(res.body.toString()) as { items: unknown[] }).items, []);
});
