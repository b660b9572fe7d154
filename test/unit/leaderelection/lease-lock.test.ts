/**
 * LeaseLock (client-go resourcelock/leaselock.go) against a scripted upstream client: which
 * requests it sends, what it reads from a Lease, and how the apiserver's refusals surface.
 * test/e2e/leaderelection/lease-lock.test.ts runs the same lock against the real apiserver.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { leaderElectionRecordToLeaseSpec, leaseSpecToLeaderElectionRecord, newLeaseLock } from '../../../src/leaderelection/lease-lock.ts';
import type { LeaderElectionRecord } from '../../../src/leaderelection/resource-lock.ts';
import { formatMicroTime, recordBytes } from '../../../src/leaderelection/resource-lock.ts';
import { ApiStatusError, isNotFound } from '../../../src/upstream/api-error.ts';
import type { UpstreamClient, UpstreamRequest, UpstreamResponse } from '../../../src/upstream/client.ts';

interface StubClient extends UpstreamClient {
  readonly requests: UpstreamRequest[];
}

/** Answers each request with the next scripted response (a function may wait on the request's signal). */
function stubClient(responses: ((req: UpstreamRequest) => Promise<UpstreamResponse> | UpstreamResponse)[]): StubClient {
  const requests: UpstreamRequest[] = [];
  return {
    requests,
    config: {
      server: new URL('https://127.0.0.1:6443'),
      tls: { rejectUnauthorized: true },
      authorization: () => Promise.resolve(undefined),
      source: 'stub',
    },
    request(req) {
      requests.push(req);
      const next = responses.shift();
      if (next === undefined) return Promise.reject(new Error(`unexpected request ${req.method} ${req.path}`));
      return Promise.resolve(next(req));
    },
    stream: () => Promise.reject(new Error('not used')),
    forward: () => Promise.reject(new Error('not used')),
    upgrade: () => Promise.reject(new Error('not used')),
    close: () => Promise.resolve(),
  };
}

function json(statusCode: number, body: unknown): () => UpstreamResponse {
  return () => ({ statusCode, headers: {}, body: Buffer.from(JSON.stringify(body)) });
}

const RECORD: LeaderElectionRecord = {
  holderIdentity: 'a',
  leaseDurationSeconds: 15,
  acquireTime: '2026-11-22T20:00:00.123456Z',
  renewTime: '2026-11-22T20:00:05.000001Z',
  leaderTransitions: 4,
};

function lease(resourceVersion: string, spec: unknown): unknown {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: 'my-lease', namespace: 'ns', resourceVersion, labels: { keep: 'me' } },
    spec,
  };
}

test('LeaseLock: get reads the record from Lease.spec, with its serialized form', async () => {
  const client = stubClient([json(200, lease('7', leaderElectionRecordToLeaseSpec(RECORD)))]);
  const lock = newLeaseLock({ client, namespace: 'ns', name: 'my-lease', identity: 'a' });
  const observed = await lock.get();
  assert.deepEqual(observed, { record: RECORD, raw: recordBytes(RECORD) });
  assert.equal(client.requests[0]?.method, 'GET');
  assert.equal(client.requests[0].path, '/apis/coordination.k8s.io/v1/namespaces/ns/leases/my-lease');
  assert.equal(lock.identity(), 'a');
  assert.equal(lock.describe(), 'ns/my-lease');
});

test("LeaseLock: get from the cache asks for resourceVersion=0 (the apiserver's watch cache, no etcd read)", async () => {
  const client = stubClient([json(200, lease('7', leaderElectionRecordToLeaseSpec(RECORD)))]);
  const lock = newLeaseLock({ client, namespace: 'ns', name: 'my-lease', identity: 'a' });
  assert.deepEqual((await lock.get(undefined, true)).record, RECORD);
  assert.equal(client.requests[0]?.path, '/apis/coordination.k8s.io/v1/namespaces/ns/leases/my-lease?resourceVersion=0');
});

test('LeaseLock: absent spec fields read as zero values (leaselock.go LeaseSpecToLeaderElectionRecord)', () => {
  assert.deepEqual(leaseSpecToLeaderElectionRecord(undefined), {
    holderIdentity: '',
    leaseDurationSeconds: 0,
    acquireTime: null,
    renewTime: null,
    leaderTransitions: 0,
  });
  assert.deepEqual(leaseSpecToLeaderElectionRecord({ holderIdentity: 'x', renewTime: null }).holderIdentity, 'x');
});

test('LeaseLock: record and Lease spec round-trip, leaderTransitions as leaseTransitions', () => {
  const spec = leaderElectionRecordToLeaseSpec(RECORD);
  assert.deepEqual(spec, {
    holderIdentity: 'a',
    leaseDurationSeconds: 15,
    acquireTime: RECORD.acquireTime,
    renewTime: RECORD.renewTime,
    leaseTransitions: 4,
  });
  assert.deepEqual(leaseSpecToLeaderElectionRecord(spec), RECORD);
});

test('LeaseLock: update PUTs the Lease as last read, carrying its resourceVersion, with the new spec', async () => {
  const renewed = { ...RECORD, renewTime: '2026-11-22T20:00:07.000000Z' };
  const client = stubClient([
    json(200, lease('7', leaderElectionRecordToLeaseSpec(RECORD))),
    json(200, lease('8', leaderElectionRecordToLeaseSpec(renewed))),
    json(200, lease('9', leaderElectionRecordToLeaseSpec(renewed))),
  ]);
  const lock = newLeaseLock({ client, namespace: 'ns', name: 'my-lease', identity: 'a' });
  await lock.get();
  await lock.update(renewed);
  await lock.update(renewed);
  const bodies = client.requests
    .slice(1)
    .map((r) => JSON.parse(String(r.body)) as { metadata: { resourceVersion: string; labels: unknown }; spec: unknown });
  assert.deepEqual(
    client.requests.map((r) => r.method),
    ['GET', 'PUT', 'PUT'],
  );
  assert.equal(bodies[0]?.metadata.resourceVersion, '7', 'the version read');
  assert.equal(bodies[1]?.metadata.resourceVersion, '8', 'then the version the last update returned');
  assert.deepEqual(bodies[0].metadata.labels, { keep: 'me' });
  assert.deepEqual(bodies[0].spec, leaderElectionRecordToLeaseSpec(renewed));
});

test('LeaseLock: create POSTs a Lease; update before any get or create is refused', async () => {
  const client = stubClient([json(201, lease('1', leaderElectionRecordToLeaseSpec(RECORD)))]);
  const lock = newLeaseLock({ client, namespace: 'ns', name: 'my-lease', identity: 'a' });
  await assert.rejects(lock.update(RECORD), /lease not initialized, call get or create first/);
  await lock.create(RECORD);
  assert.equal(client.requests[0]?.method, 'POST');
  assert.equal(client.requests[0].path, '/apis/coordination.k8s.io/v1/namespaces/ns/leases');
  assert.deepEqual(JSON.parse(String(client.requests[0].body)), {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: 'my-lease', namespace: 'ns' },
    spec: leaderElectionRecordToLeaseSpec(RECORD),
  });
});

test("LeaseLock: the apiserver's 404 and 409 surface as ApiStatusError", async () => {
  const client = stubClient([
    json(404, { kind: 'Status', code: 404, reason: 'NotFound', message: 'leases.coordination.k8s.io "my-lease" not found' }),
    json(409, { kind: 'Status', code: 409, reason: 'AlreadyExists', message: 'already exists' }),
    json(200, lease('3', {})),
    json(409, { kind: 'Status', code: 409, reason: 'Conflict', message: 'the object has been modified' }),
  ]);
  const lock = newLeaseLock({ client, namespace: 'ns', name: 'my-lease', identity: 'a' });
  await assert.rejects(lock.get(), (error) => isNotFound(error));
  await assert.rejects(lock.create(RECORD), (error) => error instanceof ApiStatusError && error.code === 409);
  await lock.get();
  await assert.rejects(
    lock.update(RECORD),
    (error) => error instanceof ApiStatusError && error.code === 409 && error.status.reason === 'Conflict',
  );
});

test('LeaseLock: a request is abandoned after requestTimeoutMs, or when the caller aborts', async () => {
  const hang = (req: UpstreamRequest): Promise<UpstreamResponse> =>
    new Promise((_, reject) => {
      req.signal?.addEventListener('abort', () => {
        reject(new Error('aborted'));
      });
    });
  const client = stubClient([hang, hang]);
  const lock = newLeaseLock({ client, namespace: 'ns', name: 'my-lease', identity: 'a', requestTimeoutMs: 20 });
  await assert.rejects(lock.get(), /aborted/);
  const caller = new AbortController();
  const pending = lock.get(caller.signal);
  caller.abort();
  await assert.rejects(pending, /aborted/);
});

test('formatMicroTime: RFC 3339 in UTC with six fraction digits, as metav1.MicroTime', () => {
  assert.equal(formatMicroTime(Date.UTC(2026, 10, 22, 20, 0, 0, 123)), '2026-11-22T20:00:00.123000Z');
  assert.equal(formatMicroTime(Date.UTC(2026, 10, 22, 20, 0, 0, 0) + 0.456), '2026-11-22T20:00:00.000456Z');
  assert.match(formatMicroTime(Date.now()), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
});
