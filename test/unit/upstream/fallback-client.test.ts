import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import type { Dispatcher } from 'undici';
import type { ForwardRequest, UpstreamClient, UpstreamRequest } from '../../../src/upstream/client.ts';
import { newFallbackClient } from '../../../src/upstream/fallback-client.ts';

/** A failure before any answer, as Node's socket gives it. */
function unreachable(code: string): Error {
  return Object.assign(new Error(`connect ${code}`), { code });
}

interface Fake extends UpstreamClient {
  /** What each call was: `request GET /x`, `forward POST /y`, `stream GET /w`. */
  readonly calls: string[];
  /** The error every call fails with, or undefined to answer. */
  failWith: Error | undefined;
  readonly streams: PassThrough[];
}

function fake(origin: string): Fake {
  const calls: string[] = [];
  const streams: PassThrough[] = [];
  const client: Fake = {
    calls,
    streams,
    failWith: undefined,
    config: {
      server: new URL(origin),
      tls: { rejectUnauthorized: true },
      authorization: () => Promise.resolve(undefined),
      source: origin,
    },
    request(req: UpstreamRequest) {
      calls.push(`request ${req.method} ${req.path}`);
      if (client.failWith !== undefined) return Promise.reject(client.failWith);
      return Promise.resolve({ statusCode: 200, headers: {}, body: Buffer.from('ok') });
    },
    stream(req: UpstreamRequest) {
      calls.push(`stream ${req.method} ${req.path}`);
      if (client.failWith !== undefined) return Promise.reject(client.failWith);
      const body = new PassThrough();
      streams.push(body);
      return Promise.resolve({ statusCode: 200, headers: {}, body } as unknown as Dispatcher.ResponseData);
    },
    forward(req: ForwardRequest) {
      calls.push(`forward ${req.method} ${req.path}`);
      if (client.failWith !== undefined) return Promise.reject(client.failWith);
      return Promise.resolve({ statusCode: 201, headers: {}, body: new PassThrough() } as unknown as Dispatcher.ResponseData);
    },
    upgrade() {
      return Promise.reject(new Error('not in this test'));
    },
    close: () => Promise.resolve(),
  };
  return client;
}

test('fallback client: the upstream proxy while it answers; refused, the same request at the apiserver and every one after; back at its first ready /readyz, the watches on the apiserver ended', async (t) => {
  const upstream = fake('https://node-proxy:443');
  const apiserver = fake('https://apiserver:6443');
  const logged: string[] = [];
  const client = newFallbackClient({
    upstream,
    apiserver,
    log: (level, _fields, message) => logged.push(`${level}: ${message}`),
    probeIntervalMs: 20,
  });
  t.after(() => client.close());
  assert.equal((await client.request({ method: 'GET', path: '/api/v1/pods' })).statusCode, 200);
  assert.deepEqual([upstream.calls, apiserver.calls], [['request GET /api/v1/pods'], []]);
  assert.equal(client.state().target, 'upstream');

  upstream.failWith = unreachable('ECONNREFUSED');
  const watch = await client.stream({ method: 'GET', path: '/api/v1/pods?watch=1' });
  assert.deepEqual(apiserver.calls, ['stream GET /api/v1/pods?watch=1'], 'sent again to the apiserver');
  assert.deepEqual(client.state(), { ...client.state(), target: 'apiserver', reason: 'ECONNREFUSED', fallbacks: 1 });
  assert.deepEqual(logged, ['warn: upstream proxy unreachable: requests go to the apiserver until it is back']);
  // Every request after goes straight to the apiserver, a client's write included.
  assert.equal((await client.forward({ method: 'POST', path: '/api/v1/namespaces/a/configmaps', headers: {} })).statusCode, 201);
  assert.deepEqual(apiserver.calls.at(-1), 'forward POST /api/v1/namespaces/a/configmaps');

  // Back: the probe's /readyz answers, the watch opened on the apiserver is ended.
  upstream.failWith = undefined;
  const ended = new Promise<Error | undefined>((resolve) => watch.body.once('error', resolve));
  await new Promise<void>((resolve) => {
    const poll = setInterval(() => {
      if (client.state().target === 'upstream') {
        clearInterval(poll);
        resolve();
      }
    }, 5);
  });
  assert.match((await ended)?.message ?? '', /the upstream proxy is back/);
  assert.ok(upstream.calls.includes('request GET /readyz'));
  assert.equal(logged.at(-1), 'info: upstream proxy back: requests go to it again');
  await client.request({ method: 'GET', path: '/api/v1/services' });
  assert.equal(upstream.calls.at(-1), 'request GET /api/v1/services');
});

test("fallback client: a client's write whose connection broke after it was sent is not sent again; one never connected is; an answer is never a reason", async (t) => {
  const upstream = fake('https://node-proxy:443');
  const apiserver = fake('https://apiserver:6443');
  const client = newFallbackClient({ upstream, apiserver, log: () => undefined, probeIntervalMs: 1 << 30 });
  t.after(() => client.close());
  const body = new PassThrough();
  upstream.failWith = unreachable('ECONNRESET');
  await assert.rejects(client.forward({ method: 'POST', path: '/api/v1/namespaces/a/configmaps', headers: {}, body }), /ECONNRESET/);
  assert.deepEqual(apiserver.calls, [], 'the write may have been acted on: its error is the client’s');
  assert.equal(client.state().target, 'apiserver', 'yet the upstream is left');

  // Its config is the upstream proxy's (what the status page and logs name).
  assert.equal(client.config.server.origin, 'https://node-proxy');
  // Never connected: sent to the apiserver, whatever the method.
  const up = fake('https://c:1');
  const api = fake('https://d:2');
  const c = newFallbackClient({ upstream: up, apiserver: api, log: () => undefined, probeIntervalMs: 1 << 30 });
  t.after(() => c.close());
  up.failWith = unreachable('UND_ERR_CONNECT_TIMEOUT');
  assert.equal((await c.forward({ method: 'POST', path: '/x', headers: {}, body: new PassThrough() })).statusCode, 201);
  assert.deepEqual(api.calls, ['forward POST /x']);
  // An error that is not a failure to reach it (an abort, a bug) is the caller's, and moves nothing.
  const u2 = fake('https://e:1');
  const c2 = newFallbackClient({ upstream: u2, apiserver: fake('https://f:2'), log: () => undefined, probeIntervalMs: 1 << 30 });
  t.after(() => c2.close());
  u2.failWith = new Error('aborted');
  await assert.rejects(c2.request({ method: 'GET', path: '/y' }), /aborted/);
  assert.equal(c2.state().target, 'upstream');
});
