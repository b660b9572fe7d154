import assert from 'node:assert/strict';
import { once } from 'node:events';
import { request as httpRequest } from 'node:http';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import {
  LARGE_HEAD_BYTES,
  MAX_OWED_SECONDS,
  newRequestHeadLimits,
  requestHeadBytes,
} from '../../../../src/server/pass-through/request-head-limits.ts';
import { TOO_MANY_REQUESTS_BODY } from '../../../../src/server/pass-through/too-many-requests.ts';
import { newProxyServer } from '../../../../src/server/http/app.ts';
import { newFakeUpstream } from '../../../helpers/fake-upstream-client.ts';
import { FakeClock } from '../../../helpers/fake-clock.ts';
import { NO_SEAT, newFlowLimits } from '../../../../src/server/pass-through/flow-limits.ts';
import type { Seat } from '../../../../src/server/pass-through/flow-limits.ts';

const MiB = 1024 * 1024;

/** The seat of a head let through (failing when it was refused). */
function seat(taken: Seat | number): Seat {
  if (typeof taken === 'number') assert.fail(`refused, Retry-After ${String(taken)}`);
  return taken;
}

test('request head limits: heads below LARGE_HEAD_BYTES are never charged; larger ones spend a bucket of bytes per address, with Retry-After past it', () => {
  const clock = new FakeClock();
  const limits = newRequestHeadLimits({ bytesPerSecond: MiB, burstBytes: 2 * MiB, maxInflightBytes: 0, clock });
  for (let i = 0; i < 10_000; i++) assert.equal(limits.take('10.0.0.1', LARGE_HEAD_BYTES - 1), NO_SEAT);
  seat(limits.take('10.0.0.1', MiB)).release();
  seat(limits.take('10.0.0.1', MiB)).release();
  // The bucket is empty: the refused head is charged all the same (it was parsed), so the wait is
  // for its own MiB and the one it owes: 2 s.
  assert.equal(limits.take('10.0.0.1', MiB), 2);
  // Small heads still pass, and another address has its own bucket.
  assert.equal(limits.take('10.0.0.1', 100), NO_SEAT);
  seat(limits.take('10.0.0.2', MiB)).release();
  clock.step(500);
  assert.equal(limits.take('10.0.0.1', MiB), 3, 'refused again: a second MiB owed, half of one back; Retry-After rounds up');
  // Refused heads wait in turn, each after those refused before it: connections refused at once
  // are read again one by one, not all in the same instant.
  assert.deepEqual(
    [0, 1, 2].map(() => limits.take('10.0.0.1', MiB)),
    [4, 5, 6],
  );
  // What an address owes stops at MAX_OWED_SECONDS of refill: however many heads are refused, the wait stays bounded.
  for (let i = 0; i < 1000; i++) limits.take('10.0.0.1', MiB);
  assert.equal(limits.take('10.0.0.1', MiB), MAX_OWED_SECONDS + 1);
  clock.step((MAX_OWED_SECONDS + 1) * 1000);
  seat(limits.take('10.0.0.1', MiB)).release();
  assert.equal(limits.rejected(), 1006);
  // 0 and 0: no limit.
  const none = newRequestHeadLimits({ bytesPerSecond: 0, burstBytes: 0, maxInflightBytes: 0, clock });
  for (let i = 0; i < 100; i++) assert.equal(none.take('10.0.0.1', MiB), NO_SEAT);
});

test('request head limits: the large heads an address holds in flight are bounded; a released seat makes room', () => {
  const clock = new FakeClock();
  const limits = newRequestHeadLimits({ bytesPerSecond: 0, burstBytes: 0, maxInflightBytes: 2 * MiB, clock });
  const first = seat(limits.take('10.0.0.1', MiB));
  const second = seat(limits.take('10.0.0.1', MiB));
  assert.equal(limits.take('10.0.0.1', MiB), 1);
  seat(limits.take('10.0.0.2', MiB));
  first.release();
  first.release();
  const third = seat(limits.take('10.0.0.1', MiB));
  assert.equal(limits.take('10.0.0.1', MiB), 1, 'a second release() of the same seat gives nothing back');
  second.release();
  third.release();
  seat(limits.take('10.0.0.1', 2 * MiB));
  assert.equal(limits.rejected(), 2);
});

test('requestHeadBytes: the target and each header line with its separators', () => {
  assert.equal(requestHeadBytes('/api', ['Host', 'x', 'Accept', '*/*']), 4 + 4 + 2 + 1 + 2 + 6 + 2 + 3 + 2);
});

test('request head limits in the server: a large head past the bucket gets the 429 before any handler reads it; small ones pass', async (t) => {
  const upstream = newFakeUpstream();
  // Every request the server passes on: the fake refuses it (a 502), and counts it.
  let forwarded = 0;
  const client = {
    ...upstream.client,
    forward: (...args: Parameters<typeof upstream.client.forward>) => {
      forwarded++;
      return upstream.client.forward(...args);
    },
  };
  const limits = newRequestHeadLimits({ bytesPerSecond: MiB, burstBytes: 2 * MiB, maxInflightBytes: 0, clock: new FakeClock() });
  const app = newProxyServer({
    client,
    fairness: { flows: newFlowLimits({ maxRequestsInflight: 0, maxWatches: 0, maxReviewsInflight: 0 }), requestHeads: limits },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  t.after(() => app.close());
  const { port } = app.server.address() as AddressInfo;
  const get = async (path: string): Promise<{ status: number; body: string; retryAfter: string | undefined }> => {
    const req = httpRequest({ host: '127.0.0.1', port, path, agent: false });
    req.end();
    const [res] = (await once(req, 'response')) as [IncomingMessage];
    let body = '';
    for await (const chunk of res) body += String(chunk);
    const retryAfter = res.headers['retry-after'];
    return { status: res.statusCode ?? 0, body, retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined };
  };
  const large = (i: number): string => `/api/v1/namespaces/n/services/${String(i)}${'x'.repeat(MiB - 100)}`;
  assert.notEqual((await get(large(1))).status, 429);
  assert.notEqual((await get(large(2))).status, 429);
  const refused = await get(large(3));
  assert.deepEqual(
    [refused.status, refused.body, refused.retryAfter],
    [429, TOO_MANY_REQUESTS_BODY.toString(), '2'],
    'its own MiB and the one it owes',
  );
  // Refused before anything read it: the upstream saw only the two let through.
  assert.equal(forwarded, 2);
  assert.notEqual((await get('/api/v1/namespaces/n/services/small')).status, 429);
});

test('request head limits in the server: a large head holds its seat until its answer ends', async (t) => {
  const upstream = newFakeUpstream();
  const limits = newRequestHeadLimits({ bytesPerSecond: 0, burstBytes: 0, maxInflightBytes: MiB + 8192, clock: new FakeClock() });
  const app = newProxyServer({
    client: upstream.client,
    fairness: { flows: newFlowLimits({ maxRequestsInflight: 0, maxWatches: 0, maxReviewsInflight: 0 }), requestHeads: limits },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  t.after(() => app.close());
  const { port } = app.server.address() as AddressInfo;
  // One at a time, each answered (the fake upstream refuses to pass it on: a 502) before the next.
  for (let i = 0; i < 5; i++) {
    const req = httpRequest({ host: '127.0.0.1', port, path: `/api/v1/services/${String(i)}${'x'.repeat(MiB - 100)}`, agent: false });
    req.end();
    const [res] = (await once(req, 'response')) as [IncomingMessage];
    res.resume();
    await once(res, 'end');
    assert.notEqual(res.statusCode, 429, `request ${String(i)}`);
  }
  assert.equal(limits.rejected(), 0);
});
