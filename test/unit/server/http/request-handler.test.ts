import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newProxyServer } from '../../../../src/server/http/app.ts';
import { isLoopbackAddress } from '../../../../src/server/http/request-handler.ts';
import type { CachedReads, ReadHeaders } from '../../../../src/server/serving/cached-reads.ts';
import { newCompressions } from '../../../../src/server/serving/gzipped-response.ts';
import { newFakeUpstream } from '../../../helpers/fake-upstream-client.ts';

test('request handler: loopback clients are 127.0.0.0/8, ::1 and 127/8 mapped into IPv6', () => {
  for (const address of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1']) assert.equal(isLoopbackAddress(address), true, address);
  for (const address of [undefined, '', '10.0.0.1', '::ffff:10.0.0.1', 'fe80::1', '128.0.0.1', '::2'])
    assert.equal(isLoopbackAddress(address), false, String(address));
});

/** Reads that answer nothing and record the headers each read was offered with. */
function recordingReads(seen: ReadHeaders[]): CachedReads {
  return {
    start: () => undefined,
    synced: () => true,
    checks: () => [],
    stop: () => Promise.resolve(),
    tryServe: (_request, headers) => {
      seen.push(headers);
      return Promise.resolve('uncached');
    },
    compressions: newCompressions(),
    tryWatch: () => Promise.resolve('uncached'),
    observeWrite: () => undefined,
    observeRead: () => undefined,
    observesWrites: false,
  };
}

test("request handler: a loopback client's Accept-Encoding reaches the cache only with compressLoopback", async (t) => {
  for (const compressLoopback of [false, true]) {
    const seen: ReadHeaders[] = [];
    const app = newProxyServer({ client: newFakeUpstream().client, cachedReads: recordingReads(seen), compressLoopback });
    t.after(() => app.close());
    // inject's client is 127.0.0.1.
    await app.inject({ method: 'GET', url: '/api/v1/pods', headers: { 'accept-encoding': 'gzip' } });
    assert.equal(seen[0]?.['accept-encoding'], compressLoopback ? 'gzip' : undefined, `compressLoopback ${String(compressLoopback)}`);
  }
});
