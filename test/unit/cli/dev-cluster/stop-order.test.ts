import assert from 'node:assert/strict';
import { test } from 'node:test';
import { REAPER_NAME, stopOrder } from '../../../../src/cli/dev-cluster/control-plane.ts';
import type { RecordedProcess } from '../../../../src/cli/dev-cluster/processes.ts';

function recorded(name: string, pid: number): RecordedProcess {
  return { name, pid, executable: `/bin/${name}`, args: [], logFile: `/tmp/${name}.log` };
}

test('dev-cluster down: the reverse of the start order, and the reaper last, whenever it was recorded', () => {
  const etcd = recorded('etcd', 1);
  const apiserver = recorded('kube-apiserver', 2);
  const reaper = recorded(REAPER_NAME, 3);
  // The reaper is recorded after the control plane it watches: stopped first, an owner killed
  // while it stopped kube-apiserver (a test runner's forced exit) left etcd running.
  assert.deepEqual(
    stopOrder([etcd, apiserver, reaper]).map((p) => p.name),
    ['kube-apiserver', 'etcd', REAPER_NAME],
  );
  assert.deepEqual(
    stopOrder([reaper, etcd, apiserver]).map((p) => p.name),
    ['kube-apiserver', 'etcd', REAPER_NAME],
  );
  assert.deepEqual(
    stopOrder([etcd, apiserver]).map((p) => p.name),
    ['kube-apiserver', 'etcd'],
  );
});
