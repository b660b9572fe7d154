/**
 * A writer that keeps a type busy: patches the seeded pods directly at the apiserver at `rate`
 * updates/s, round-robin over the namespaces, until stopped. The busy-type scenarios run their
 * reads while it writes (strong mode's reads are served from the cache only while changes are in
 * flight for the type).
 */
import type { UpstreamClient } from '../src/upstream/client.ts';
import { namespaceName, podName } from './cluster.ts';
import { startPacedWrites } from './paced-writes.ts';

/** Writes in flight at most: the writer falls behind rather than piling up requests. */
const MAX_IN_FLIGHT = 32;

export interface PodWriter {
  /** Stops writing; resolves with the number of writes made once the last one answered. */
  stop(): Promise<number>;
}

export interface PodWriterSpec {
  readonly rate: number;
  readonly pods: number;
  readonly namespaces: number;
  /** Told of each write's resourceVersion as its answer arrives. */
  readonly onWritten?: (resourceVersion: string) => void;
}

export function startPodWriter(client: UpstreamClient, spec: PodWriterSpec): PodWriter {
  let written = 0;
  const perNamespace = Math.ceil(spec.pods / spec.namespaces);
  const run = String(Date.now());
  const writes = startPacedWrites(spec.rate, MAX_IN_FLIGHT, (j) => {
    const ns = j % spec.namespaces;
    const pod = ns + spec.namespaces * (Math.floor(j / spec.namespaces) % perNamespace);
    if (pod >= spec.pods) return undefined;
    return (async () => {
      const res = await client.request({
        method: 'PATCH',
        path: `/api/v1/namespaces/${namespaceName(ns)}/pods/${podName(pod)}`,
        headers: { 'content-type': 'application/merge-patch+json' },
        // Unique per write: a patch that changes nothing makes no event.
        body: JSON.stringify({ metadata: { annotations: { 'bench-busy': `${run}-${String(j)}` } } }),
      });
      if (res.statusCode !== 200) throw new Error(`writer: ${String(res.statusCode)} ${res.body.toString().slice(0, 300)}`);
      written++;
      if (spec.onWritten !== undefined) {
        spec.onWritten((JSON.parse(res.body.toString()) as { metadata: { resourceVersion: string } }).metadata.resourceVersion);
      }
    })();
  });
  return {
    async stop() {
      await writes.stop();
      return written;
    },
  };
}
