/**
 * An h2 connection's idle timeout at its own time scale (Go's IdleTimeout as the apiserver sets
 * it, 90 s): a watch with nothing to say for longer than that keeps its connection (the timeout
 * counts from the last stream's end, never frames), and once the last stream ends the connection
 * is closed with a GOAWAY 90 s later, not sooner.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:http2';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseProxyOptions } from '../../../src/cli/proxy-options.ts';
import { startProxy } from '../../../src/proxy/proxy.ts';
import { HTTP2_IDLE_TIMEOUT_MS } from '../../../src/server/http/http2-sessions.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube } from '../../helpers/kube.ts';

const shared = useSharedAdmin();

test(
  'h2: a quiet watch outlives the idle timeout; the connection is let go (GOAWAY) the idle timeout after its last stream ends',
  { timeout: 360_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const options = parseProxyOptions(['--port', '0', '--resources', 'configmaps', '--log-level', 'warn', '--tls-generate']);
    const proxy = await startProxy(options, await upstreamConfigFor(shared.cp));
    t.after(() => proxy.stop(1_000));
    assert.ok(proxy.url !== undefined && proxy.ca !== undefined);
    const session = connect(proxy.url, { ca: proxy.ca });
    t.after(() => {
      session.destroy();
    });
    const goaways: number[] = [];
    session.on('goaway', () => goaways.push(performance.now()));
    // No bookmarks asked: nothing at all is written on the watch until an event.
    const stream = session.request({ ':path': `/api/v1/namespaces/${ns}/configmaps?watch=1` });
    let text = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => (text += chunk));
    await new Promise<void>((resolve, reject) => {
      stream.once('response', () => {
        resolve();
      });
      stream.once('error', reject);
    });
    // Longer than the idle timeout with not a frame either way.
    await sleep(HTTP2_IDLE_TIMEOUT_MS + 10_000);
    assert.deepEqual(goaways, [], 'no GOAWAY while a stream is open');
    assert.equal(stream.closed, false, 'the quiet watch is open');
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'after-quiet' } });
    await eventually('the event on the watch that was quiet', () => text.includes('"name":"after-quiet"'));

    // The last stream ends: the connection is idle from now on.
    const idleFrom = performance.now();
    stream.close();
    await eventually('the GOAWAY of the idle connection', () => goaways.length > 0, HTTP2_IDLE_TIMEOUT_MS + 60_000);
    const idleMs = Math.min(...goaways) - idleFrom;
    t.diagnostic(`GOAWAY ${(idleMs / 1000).toFixed(1)} s after the last stream ended`);
    assert.ok(idleMs >= HTTP2_IDLE_TIMEOUT_MS - 1_000, `not before the idle timeout (${String(Math.round(idleMs))} ms)`);
  },
);
