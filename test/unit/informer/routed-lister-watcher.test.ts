import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ListerWatcher } from '../../../src/informer/lister-watcher.ts';
import { leaderFailure, newRoutedListerWatcher } from '../../../src/informer/routed-lister-watcher.ts';
import { ApiStatusError } from '../../../src/upstream/api-error.ts';
import { SILENT_LEADER_WATCH_MS } from '../../../src/protocol/pool-protocol.ts';
import type { PoolTarget } from '../../../src/upstream/pool-route.ts';
import { LEADER_RETRY_INITIAL_MS, newPoolRoute } from '../../../src/upstream/pool-route.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import {
  ScriptedListerWatcher,
  apiError,
  bookmark,
  connectionError,
  errorEvent,
  flushUntil,
  isPending,
  obj,
  page,
} from '../../helpers/scripted-lister-watcher.ts';

const SELF = 'https://10.0.0.1:8443';
const LEADER = 'https://10.0.0.2:8443';
const NEXT = 'https://10.0.0.3:8443';

interface Routed {
  clock: FakeClock;
  route: ReturnType<typeof newPoolRoute>;
  apiserver: ScriptedListerWatcher;
  leaders: Map<string, ScriptedListerWatcher>;
  opened: PoolTarget[];
  lw: ListerWatcher;
  /** Another scope's routed ListerWatcher, on the same route (its own apiserver and leaders). */
  other: () => { lw: ListerWatcher; apiserver: ScriptedListerWatcher; leaders: Map<string, ScriptedListerWatcher> };
}

function routed(): Routed {
  const clock = new FakeClock();
  const route = newPoolRoute({ self: SELF, clock });
  const opened: PoolTarget[] = [];
  const make = (scope: string): { lw: ListerWatcher; apiserver: ScriptedListerWatcher; leaders: Map<string, ScriptedListerWatcher> } => {
    const apiserver = new ScriptedListerWatcher();
    const leaders = new Map<string, ScriptedListerWatcher>();
    const lw = newRoutedListerWatcher({
      route,
      scope,
      apiserver,
      leader: (url) => {
        let leader = leaders.get(url);
        if (leader === undefined) leaders.set(url, (leader = new ScriptedListerWatcher()));
        return leader;
      },
      opened: (target) => {
        opened.push(target);
        return () => undefined;
      },
      clock,
    });
    return { lw, apiserver, leaders };
  };
  const { lw, apiserver, leaders } = make('configmaps');
  return { clock, route, apiserver, leaders, opened, lw, other: () => make('services') };
}

test('routed ListerWatcher: reads from the leader while it answers, from the apiserver while none is known', async () => {
  const { route, apiserver, leaders, lw } = routed();
  apiserver.scriptList(page('10', [obj('ns', 'a', '10')]));
  assert.equal((await lw.list({})).resourceVersion, '10');
  route.setLeader(LEADER);
  const leader = new ScriptedListerWatcher().scriptList(page('11', [obj('ns', 'a', '10')]));
  leaders.set(LEADER, leader);
  assert.equal((await lw.list({ resourceVersion: '0' })).resourceVersion, '11');
  assert.equal(apiserver.listCalls.length, 1);
  assert.deepEqual(leader.listCalls[0]?.options, { resourceVersion: '0' });
});

test('routed ListerWatcher: a leader that refuses the connection is left for the apiserver within the same call', async () => {
  const { clock, route, apiserver, leaders, lw, opened } = routed();
  route.setLeader(LEADER);
  leaders.set(LEADER, new ScriptedListerWatcher().scriptWatchErrors(connectionError()));
  const watch = await lw.watch({ resourceVersion: '42' });
  assert.deepEqual(apiserver.watchCalls[0]?.options, { resourceVersion: '42' }, 'the same watch, from the same RV');
  assert.deepEqual(opened, [{ kind: 'apiserver', reason: 'leader-unreachable', detail: 'connect ECONNREFUSED 127.0.0.1:6443' }]);
  // Its retry time: the apiserver's watch ends, and the reflector's next watch goes to the leader.
  clock.step(LEADER_RETRY_INITIAL_MS);
  assert.equal(await watch.next(), undefined);
  assert.equal(apiserver.watchCalls.at(0)?.watch.isStopped(), true);
  await lw.watch({ resourceVersion: '43' });
  assert.deepEqual(leaders.get(LEADER)?.watchCalls[1]?.options, { resourceVersion: '43' });
});

test('routed ListerWatcher: 403 and 5xx from the leader fall back; 410 is the caller’s, as the apiserver’s', async () => {
  const { route, apiserver, leaders, lw } = routed();
  route.setLeader(LEADER);
  leaders.set(LEADER, new ScriptedListerWatcher().scriptList(apiError(403, 'Forbidden')));
  apiserver.scriptList(page('5', []));
  assert.equal((await lw.list({})).resourceVersion, '5');

  route.setLeader(NEXT);
  leaders.set(NEXT, new ScriptedListerWatcher().scriptWatchErrors(apiError(410, 'Expired')));
  await assert.rejects(lw.watch({ resourceVersion: '1' }), /410/);
  assert.equal(apiserver.watchCalls.length, 0, 'a 410 is not a reason to ask the apiserver');
});

test('routed ListerWatcher: a change of leader ends the open watch; the next one opens on the new leader from the last RV', async () => {
  const { route, leaders, lw, opened } = routed();
  route.setLeader(LEADER);
  const watch = await lw.watch({ resourceVersion: '7' });
  const first = leaders.get(LEADER)?.watchCalls[0]?.watch;
  first?.emit({ type: 'ADDED', object: obj('ns', 'a', '8') });
  assert.equal((await watch.next())?.type, 'ADDED');
  const ended = watch.next();
  const rerouted = watch.rerouted;
  assert.ok(rerouted !== undefined);
  assert.equal(rerouted(), false);
  route.setLeader(NEXT);
  assert.equal(await ended, undefined, 'ended as a watch the server closed');
  assert.equal(rerouted(), true, 'ended because its route moved: no very short watch, whatever it lasted');
  assert.equal(first?.isStopped(), true);
  await lw.watch({ resourceVersion: '8' });
  assert.deepEqual(leaders.get(NEXT)?.watchCalls[0]?.options, { resourceVersion: '8' });
  assert.deepEqual(opened, [
    { kind: 'leader', url: LEADER },
    { kind: 'leader', url: NEXT },
  ]);
});

test('routed ListerWatcher: becoming the leader moves the watch to the apiserver; a broken leader watch reports the leader and ends', async () => {
  const { route, apiserver, leaders, lw } = routed();
  route.setLeader(LEADER);
  const watch = await lw.watch({ resourceVersion: '7' });
  route.setLeading(true);
  assert.equal(await watch.next(), undefined);
  await lw.watch({ resourceVersion: '9' });
  assert.deepEqual(apiserver.watchCalls[0]?.options, { resourceVersion: '9' });

  route.setLeading(false);
  const again = await lw.watch({ resourceVersion: '9' });
  const leaderWatch = leaders.get(LEADER)?.watchCalls[1]?.watch;
  leaderWatch?.fail(connectionError('ECONNRESET'));
  // Ended as a watch the server closed: the reflector resumes on the apiserver from its RV, no relist.
  assert.equal(await again.next(), undefined);
  await flushUntil('the route to leave the leader', () => route.target().kind === 'apiserver');
  assert.equal(again.rerouted?.(), true);
  assert.deepEqual(route.target(), { kind: 'apiserver', reason: 'leader-unreachable', detail: 'connect ECONNRESET 127.0.0.1:6443' });
});

/** A TLS verification failure as Node reports it (tls.connect's error, with its OpenSSL code). */
function tlsError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

test('routed ListerWatcher: any failure to use the leader (every TLS verification error, a bad URL, a timeout, garbage) falls back in the same call', async () => {
  const failures: Error[] = [
    tlsError('DEPTH_ZERO_SELF_SIGNED_CERT', 'self-signed certificate'),
    tlsError('SELF_SIGNED_CERT_IN_CHAIN', 'self-signed certificate in certificate chain'),
    tlsError('UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'unable to verify the first certificate'),
    tlsError('UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'unable to get local issuer certificate'),
    tlsError('CERT_HAS_EXPIRED', 'certificate has expired'),
    tlsError('CERT_NOT_YET_VALID', 'certificate is not yet valid'),
    tlsError('ERR_TLS_CERT_ALTNAME_INVALID', "Hostname/IP does not match certificate's altnames"),
    tlsError('ERR_SSL_WRONG_VERSION_NUMBER', 'wrong version number'),
    tlsError('EPROTO', 'write EPROTO'),
    tlsError('ENOTFOUND', 'getaddrinfo ENOTFOUND leader.invalid'),
    tlsError('UND_ERR_CONNECT_TIMEOUT', 'Connect Timeout Error'),
    tlsError('UND_ERR_HEADERS_TIMEOUT', 'Headers Timeout Error'),
    new TypeError('Invalid URL'),
    new SyntaxError('Unexpected token < in JSON at position 0'),
    apiError(401, 'Unauthorized'),
  ];
  for (const failure of failures) {
    const { route, apiserver, leaders, lw } = routed();
    route.setLeader(LEADER);
    leaders.set(LEADER, new ScriptedListerWatcher().scriptList(failure).scriptWatchErrors(failure));
    apiserver.scriptList(page('5', []));
    assert.equal((await lw.list({})).resourceVersion, '5', failure.message);
    assert.deepEqual(route.target(), { kind: 'apiserver', reason: 'leader-unreachable', detail: failure.message }, failure.message);
    assert.equal(leaderFailure(failure), 'leader', failure.message);
  }
  // A leader whose client cannot even be made (an identity that slipped past the checks).
  const clock = new FakeClock();
  const route = newPoolRoute({ self: SELF, clock });
  const apiserver = new ScriptedListerWatcher();
  const lw = newRoutedListerWatcher({
    route,
    scope: 'configmaps',
    apiserver,
    leader: () => {
      throw new TypeError('Invalid URL');
    },
    clock,
  });
  route.setLeader(LEADER);
  await lw.watch({ resourceVersion: '3' });
  assert.deepEqual(apiserver.watchCalls[0]?.options, { resourceVersion: '3' });
  assert.equal(route.target().kind, 'apiserver');
});

test('routed ListerWatcher: a leader refusing one type (its 503: its own upstream watch is not open) moves that type alone', async () => {
  const { route, apiserver, leaders, lw, other } = routed();
  route.setLeader(LEADER);
  const refusal = new ApiStatusError(503, {
    kind: 'Status',
    code: 503,
    reason: 'ServiceUnavailable',
    message: 'the cache does not answer this request, which accepts cached answers only (Cache-Control: only-if-cached): not-watching',
  });
  leaders.set(LEADER, new ScriptedListerWatcher().scriptWatchErrors(refusal));
  await lw.watch({ resourceVersion: '20' });
  assert.deepEqual(apiserver.watchCalls[0]?.options, { resourceVersion: '20' }, 'the same watch from the apiserver');
  assert.deepEqual(route.scope('configmaps').target(), { kind: 'apiserver', reason: 'leader-refused', detail: refusal.message });
  // Another type still reads from the leader.
  const services = other();
  await services.lw.watch({ resourceVersion: '20' });
  assert.equal(services.leaders.get(LEADER)?.watchCalls.length, 1);
  assert.equal(services.apiserver.watchCalls.length, 0);
  for (const code of [403, 404, 429, 500]) assert.equal(leaderFailure(apiError(code, 'x')), 'scope', String(code));
  for (const answer of [apiError(410, 'Expired'), apiError(410, 'Gone')]) assert.equal(leaderFailure(answer), undefined);
  const tooLarge = new ApiStatusError(504, {
    kind: 'Status',
    code: 504,
    reason: 'Timeout',
    details: { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }] },
  });
  assert.equal(leaderFailure(tooLarge), undefined, "the apiserver's own answer: the reflector's to handle");
});

test('routed ListerWatcher: a leader watch silent past the bound fails the leader; heartbeats keep it and go no further', async () => {
  const { clock, route, apiserver, leaders, lw } = routed();
  route.setLeader(LEADER);
  const watch = await lw.watch({ resourceVersion: '30', allowWatchBookmarks: true });
  const inner = leaders.get(LEADER)?.watchCalls[0]?.watch;
  // Heartbeats (bookmarks at the RV the watch reached) keep it alive and are swallowed.
  let pending = watch.next();
  for (let i = 0; i < 5; i++) {
    clock.step(SILENT_LEADER_WATCH_MS - 1);
    inner?.emit(bookmark('30'));
    assert.equal(await isPending(pending), true, 'a heartbeat is not handed on');
  }
  assert.equal(route.target().kind, 'leader');
  // A change and a bookmark that moves the RV are handed on; a heartbeat at the new RV is not.
  inner?.emit({ type: 'ADDED', object: obj('ns', 'a', '31') }, bookmark('31'), bookmark('35'));
  assert.equal((await pending)?.type, 'ADDED');
  assert.deepEqual(await watch.next(), bookmark('35'));
  pending = watch.next();
  clock.step(SILENT_LEADER_WATCH_MS - 1);
  assert.equal(await isPending(pending), true);
  clock.step(1);
  assert.equal(await pending, undefined, 'ended as a closed watch');
  assert.equal(inner?.isStopped(), true);
  assert.deepEqual(route.target(), { kind: 'apiserver', reason: 'leader-unreachable', detail: 'its watch was silent for 8 s' });
  await lw.watch({ resourceVersion: '35' });
  assert.deepEqual(apiserver.watchCalls[0]?.options, { resourceVersion: '35' });
  // The apiserver's own watch is never timed: it may be quiet for minutes.
  route.setLeader('');
  const quiet = await lw.watch({ resourceVersion: '35' });
  const waiting = quiet.next();
  clock.step(10 * SILENT_LEADER_WATCH_MS);
  assert.equal(await isPending(waiting), true);
  assert.equal(apiserver.watchCalls[1]?.watch.isStopped(), false);
});

test('routed ListerWatcher: an ERROR event other than 410 from the leader refuses the type; 410 is the reflector’s', async () => {
  const { route, leaders, lw } = routed();
  route.setLeader(LEADER);
  const watch = await lw.watch({ resourceVersion: '40' });
  const inner = leaders.get(LEADER)?.watchCalls[0]?.watch;
  inner?.emit(errorEvent(410, 'Expired'));
  assert.equal((await watch.next())?.type, 'ERROR');
  assert.equal(route.scope('configmaps').target().kind, 'leader');
  const again = await lw.watch({ resourceVersion: '40' });
  leaders.get(LEADER)?.watchCalls[1]?.watch.emit(errorEvent(500, 'InternalError'));
  assert.equal((await again.next())?.type, 'ERROR');
  assert.equal(route.scope('configmaps').target().kind, 'apiserver');
});

test('routed ListerWatcher: stopping (the informer’s signal) is no failure of the leader', async () => {
  const { route, leaders, lw } = routed();
  route.setLeader(LEADER);
  const abort = new AbortController();
  abort.abort();
  leaders.set(
    LEADER,
    new ScriptedListerWatcher().scriptList(Object.assign(new Error('This operation was aborted'), { name: 'AbortError' })),
  );
  await assert.rejects(lw.list({}, abort.signal), /aborted/);
  assert.deepEqual(route.target(), { kind: 'leader', url: LEADER });
});
