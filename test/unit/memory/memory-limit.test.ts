import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { readMemoryLimit } from '../../../src/memory/memory-limit.ts';

const MiB = 1024 * 1024;
const PHYSICAL = 64 * 1024 * MiB;

/** A fake root with the given files (paths relative to it). */
function root(t: { after(fn: () => void): void }, files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-cgroup-'));
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

test('memory limit: cgroup v2 memory.max of the process’s cgroup, the lowest along its ancestors', (t) => {
  const dir = root(t, {
    'proc/self/cgroup': '0::/kubepods/pod1/ctr\n',
    'sys/fs/cgroup/cgroup.controllers': 'cpuset cpu io memory pids\n',
    'sys/fs/cgroup/kubepods/memory.max': 'max\n',
    'sys/fs/cgroup/kubepods/pod1/memory.max': `${String(200 * MiB)}\n`,
    'sys/fs/cgroup/kubepods/pod1/ctr/memory.max': `${String(256 * MiB)}\n`,
  });
  assert.deepEqual(readMemoryLimit({ root: dir, physicalBytes: PHYSICAL }), { bytes: 200 * MiB, source: 'cgroup v2 memory.max' });
});

test('memory limit: cgroup v2 "max" everywhere is no limit; a container’s own namespace reads the mount', (t) => {
  const unlimited = root(t, {
    'proc/self/cgroup': '0::/a\n',
    'sys/fs/cgroup/cgroup.controllers': 'memory\n',
    'sys/fs/cgroup/a/memory.max': 'max\n',
  });
  assert.equal(readMemoryLimit({ root: unlimited, physicalBytes: PHYSICAL }), undefined);
  const namespaced = root(t, {
    'proc/self/cgroup': '0::/\n',
    'sys/fs/cgroup/cgroup.controllers': 'memory\n',
    'sys/fs/cgroup/memory.max': `${String(160 * MiB)}\n`,
  });
  assert.equal(readMemoryLimit({ root: namespaced, physicalBytes: PHYSICAL })?.bytes, 160 * MiB);
});

test('memory limit: cgroup v1 memory.limit_in_bytes where the memory controller is on v1 (hybrid hosts)', (t) => {
  const dir = root(t, {
    'proc/self/cgroup': '12:pids:/x\n4:memory:/kubepods/pod2/ctr\n0::/\n',
    // The unified hierarchy without the memory controller: not the one to read.
    'sys/fs/cgroup/cgroup.controllers': 'pids\n',
    'sys/fs/cgroup/memory/memory.limit_in_bytes': '9223372036854771712\n',
    'sys/fs/cgroup/memory/kubepods/pod2/memory.limit_in_bytes': '9223372036854771712\n',
    'sys/fs/cgroup/memory/kubepods/pod2/ctr/memory.limit_in_bytes': `${String(160 * MiB)}\n`,
  });
  assert.deepEqual(readMemoryLimit({ root: dir, physicalBytes: PHYSICAL }), {
    bytes: 160 * MiB,
    source: 'cgroup v1 memory.limit_in_bytes',
  });
});

test('memory limit: cgroup v1 without a cgroup namespace: a path missing under the mount is read at the mount', (t) => {
  const dir = root(t, {
    'proc/self/cgroup': '9:cpu,memory:/docker/abc\n',
    'sys/fs/cgroup/memory/memory.limit_in_bytes': `${String(300 * MiB)}\n`,
  });
  assert.equal(readMemoryLimit({ root: dir, physicalBytes: PHYSICAL })?.bytes, 300 * MiB);
});

test('memory limit: the flag wins; a limit at or above the machine’s memory is none; no /proc is none', (t) => {
  const dir = root(t, {
    'proc/self/cgroup': '0::/\n',
    'sys/fs/cgroup/cgroup.controllers': 'memory\n',
    'sys/fs/cgroup/memory.max': `${String(8 * 1024 * MiB)}\n`,
  });
  assert.deepEqual(readMemoryLimit({ root: dir, flagBytes: 128 * MiB, physicalBytes: PHYSICAL }), {
    bytes: 128 * MiB,
    source: '--memory-limit',
  });
  assert.equal(readMemoryLimit({ root: dir, physicalBytes: 4 * 1024 * MiB }), undefined);
  assert.equal(readMemoryLimit({ root: join(dir, 'nothing-here'), physicalBytes: PHYSICAL }), undefined);
});
