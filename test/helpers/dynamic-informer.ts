/**
 * A client-go dynamic informer as its own process (tools/goclient --mode=dynamic-informer, built
 * by go-client.ts): its handler calls on stderr as `TYPE namespace/name rv` once it has synced,
 * its store on stdout when its stdin ends.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';

export interface DynamicInformer {
  readonly child: ChildProcessWithoutNullStreams;
  /** Resolves once it printed `synced`; rejects if it exits first. */
  readonly synced: Promise<void>;
  stderr(): string;
  /** Its handler calls since it synced: `TYPE namespace/name rv` lines. */
  events(): string[];
  /** Ends it (stdin closed) and resolves its store: namespace/name → RV. */
  finish(): Promise<{ store: Map<string, string> }>;
}

/** `resource` is group/version/plural; `namespace` the one it watches. */
export function startDynamicInformer(binary: string, kubeconfig: string, resource: string, namespace: string): DynamicInformer {
  const child = spawn(binary, [
    `--kubeconfig=${kubeconfig}`,
    '--mode=dynamic-informer',
    `--resource=${resource}`,
    `--namespace=${namespace}`,
  ]);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  const synced = new Promise<void>((resolve, reject) => {
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (/^synced$/m.test(stderr)) resolve();
    });
    void exited.then((code) => {
      reject(new Error(`goclient exited ${String(code)} before it synced: ${stderr}`));
    });
  });
  return {
    child,
    synced,
    stderr: () => stderr,
    events: () => stderr.split('\n').filter((line) => /^(ADDED|MODIFIED|DELETED) /.test(line)),
    async finish() {
      child.stdin.end();
      const code = await exited;
      assert.equal(code, 0, `goclient: ${stderr}`);
      const store = new Map<string, string>();
      for (const line of stdout.trim().split('\n')) {
        const [key = '', value = ''] = line.split(' ');
        if (key !== 'watch-errors') store.set(key, value);
      }
      return { store };
    },
  };
}
