import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { freeLoopbackPort, isRunning, stopProcesses } from '../../../../src/cli/dev-cluster/processes.ts';
import type { RecordedProcess } from '../../../../src/cli/dev-cluster/processes.ts';

function startSleep(t: { after(fn: () => void): void }): RecordedProcess {
  const child = spawn('/bin/sleep', ['60'], { stdio: 'ignore' });
  t.after(() => child.kill('SIGKILL'));
  assert.ok(child.pid);
  return { name: 'sleep', pid: child.pid, executable: '/bin/sleep', args: ['60'], logFile: '/dev/null' };
}

test('processes: a recorded process runs until stopped, and is gone after stopProcesses', async (t) => {
  const sleeper = startSleep(t);
  assert.equal(isRunning(sleeper), true);
  await stopProcesses([sleeper], 2_000);
  assert.equal(isRunning(sleeper), false);
});

test('processes: a pid now running another executable is not ours and is never signalled', async (t) => {
  const sleeper = startSleep(t);
  const impostor: RecordedProcess = { ...sleeper, executable: '/usr/bin/etcd-that-was' };
  assert.equal(isRunning(impostor), false);
  await stopProcesses([impostor], 100);
  assert.equal(isRunning(sleeper), true, 'the process behind the recycled pid still runs');
});

test('processes: freeLoopbackPort returns a port that can be bound on 127.0.0.1', async () => {
  const port = await freeLoopbackPort();
  assert.ok(port > 0 && port < 65536);
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.on('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  await new Promise<void>((resolve) =>
    server.close(() => {
      resolve();
    }),
  );
});
