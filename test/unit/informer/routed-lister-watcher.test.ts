import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newRoutedListerWatcher } from '../../../src/informer/routed-lister-watcher.ts';
import type { PoolTarget } from '../../../src/upstream/pool-route.ts';
import { LEADER_RETRY_INITIAL_MS, newPoolRoute } from '../../../src/upstream/pool-route.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import { ScriptedListerWatcher, apiError, connectionError, flushUntil, obj, page } from '../../helpers/scripted-lister-watcher.ts';

const SELF = 'https://10.0.0.1:8443';
const LEADER = 'https://10.0.0.2:8443';
const NEXT = 'https://10.0.0.3:8443';

function routed(): {
  clock: FakeClock;
  route: ReturnType<typeof newPoolRoute>;
  apiserver: ScriptedListerWatcher;
  leaders: Map<string, ScriptedListerWatcher>;
  opened: PoolTarget[];
  lw: ReturnType<typeof newRoutedListerWatcher>;
} {
  const clock = new FakeClock();
  const route = newPoolRoute({ self: SELF, clock });
  const apiserver = new ScriptedListerWatcher();
  const leaders = new Map<string, ScriptedListerWatcher>();
  const opened: PoolTarget[] = [];
  const lw = newRoutedListerWatcher({
    route,
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
  });
  return { clock, route, apiserver, leaders, opened, lw };
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
  assert.deepEqual(opened, [{ kind: 'apiserver', reason: 'leader-unreachable' }]);
  // Its retry time: the apiserver's watch ends, and the reflector's next watch goes to the leader.
  clock.step(LEADER_RETRY_INITIAL_MS);
  assert.equal(await watch.next(), undefined);
  assert.equal(apiserver.watchCalls.at(0)?.watch.isStopped(), true);
  await lw.watch({ resourceVersion: '43' });
  assert.deepEqual(leaders.get(LEADER)?.watchCalls[1]?.options, { resourceVersion: '43' });
});

test('routed ListerWatcher: 403 and 5xx from the leader fall back; other answers (410) are the caller’s', async () => {
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
  route.setLeader(NEXT);
  assert.equal(await ended, undefined, 'ended as a watch the server closed');
  assert.equal(first?.isStopped(), true);
  await lw.watch({ resourceVersion: '8' });
  assert.deepEqual(leaders.get(NEXT)?.watchCalls[0]?.options, { resourceVersion: '8' });
  assert.deepEqual(opened, [
    { kind: 'leader', url: LEADER },
    { kind: 'leader', url: NEXT },
  ]);
});

test('routed ListerWatcher: becoming the leader moves the watch to the apiserver; a broken leader watch reports the leader', async () => {
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
  await assert.rejects(again.next(), /ECONNRESET/);
  await flushUntil('the route to leave the leader', () => route.target().kind === 'apiserver');
  assert.deepEqual(route.target(), { kind: 'apiserver', reason: 'leader-unreachable' });
});
