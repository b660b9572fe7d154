/**
 * Where the proxy's CPU went: aggregates a V8 .cpuprofile (node --cpu-prof) by function, summing
 * each node's self time (the sample intervals spent in it), and returns the top entries.
 * `node bench/profile.ts FILE.cpuprofile [N]` prints them for one file.
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';

interface CpuProfile {
  readonly nodes: readonly {
    readonly id: number;
    readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  }[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface SelfTime {
  readonly name: string;
  readonly selfMs: number;
  readonly share: number;
}

export function summarizeProfile(file: string, top = 15): { totalMs: number; top: SelfTime[] } {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const nameOf = new Map<number, string>();
  for (const node of profile.nodes) {
    const { functionName, url, lineNumber } = node.callFrame;
    const where = url === '' ? '' : ` ${basename(url)}:${String(lineNumber + 1)}`;
    nameOf.set(node.id, `${functionName === '' ? '(anonymous)' : functionName}${where}`);
  }
  const self = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    // timeDeltas[i] is the time since the previous sample; it is charged to sample i's node.
    const us = profile.timeDeltas[i] ?? 0;
    const name = nameOf.get(id) ?? '(unknown)';
    self.set(name, (self.get(name) ?? 0) + us);
  });
  const busy = [...self].filter(([name]) => !name.startsWith('(idle)'));
  const busyTotal = busy.reduce((s, [, us]) => s + us, 0);
  return {
    totalMs: busyTotal / 1000,
    top: busy
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, selfMs: us / 1000, share: us / busyTotal })),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const file = process.argv[2];
  if (file === undefined) throw new Error('usage: profile.ts FILE.cpuprofile [N]');
  const { totalMs, top } = summarizeProfile(file, Number(process.argv[3] ?? 20));
  console.log(`${file}: ${totalMs.toFixed(0)} ms busy`);
  for (const t of top) console.log(`${t.selfMs.toFixed(0).padStart(8)} ms ${(t.share * 100).toFixed(1).padStart(5)}%  ${t.name}`);
}
