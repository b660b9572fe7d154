/**
 * Something for a pod's `.../proxy/...` to reach, on a machine with no kubelet (ryw-poison): a
 * network namespace of the suite's own joined to the host by a veth pair with 10.213.X.0/30
 * addresses, and pod-answer.ts listening inside it on .2. A pod whose status.podIP is .2 can
 * then be proxied to by the apiserver, which dials from the host: it refuses loopback and
 * link-local pod IPs (pkg/registry/core/pod/strategy.go ResourceLocation: `!ip.IsGlobalUnicast()`
 * is "address not allowed"), and a private 10.x address is global unicast.
 *
 * Needs root and iproute2's `ip`; `startPodBackend` says why not otherwise. `close()` removes the
 * namespace (and the veth pair with it).
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { request } from 'undici';
import { eventually } from '../../test/helpers/eventually.ts';

export interface PodBackend {
  /** The address to give the pod as status.podIP. */
  readonly podIp: string;
  readonly port: number;
  close(): void;
}

const ANSWER = join(import.meta.dirname, 'pod-answer.ts');
const PORT = 8080;

function ip(args: readonly string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** The backend, answering every request with a Pod claiming `resourceVersion`; or why it cannot be had here. */
export async function startPodBackend(resourceVersion: string): Promise<PodBackend | string> {
  if (process.getuid?.() !== 0) return 'a network namespace needs root';
  try {
    execFileSync('ip', ['-V'], { stdio: 'ignore' });
  } catch {
    return "iproute2's ip command is not installed";
  }
  const id = randomBytes(2).toString('hex');
  const netns = `kcp-hostile-${id}`;
  const hostSide = `kcph${id}a`;
  const podSide = `kcph${id}b`;
  // A /30 of 10.213.0.0/16 picked at random: two runs on one machine rarely meet.
  const block = (randomBytes(2).readUInt16BE() & 0x3fff) * 4;
  const net = `10.213.${String(block >> 8)}.${String(block & 0xff)}`;
  const host = `10.213.${String(block >> 8)}.${String((block & 0xff) + 1)}`;
  const podIp = `10.213.${String(block >> 8)}.${String((block & 0xff) + 2)}`;
  let child: ReturnType<typeof spawn> | undefined;
  const close = (): void => {
    process.off('exit', close);
    child?.kill('SIGTERM');
    try {
      ip(['netns', 'del', netns]);
    } catch {
      // never made
    }
    try {
      ip(['link', 'del', hostSide]);
    } catch {
      // gone with the namespace
    }
  };
  // However the run ends (Ctrl-C included), the namespace goes with it: close() is synchronous.
  process.once('exit', close);
  try {
    ip(['netns', 'add', netns]);
    ip(['link', 'add', hostSide, 'type', 'veth', 'peer', 'name', podSide]);
    ip(['link', 'set', podSide, 'netns', netns]);
    ip(['addr', 'add', `${host}/30`, 'dev', hostSide]);
    ip(['link', 'set', hostSide, 'up']);
    ip(['-n', netns, 'addr', 'add', `${podIp}/30`, 'dev', podSide]);
    ip(['-n', netns, 'link', 'set', podSide, 'up']);
    ip(['-n', netns, 'link', 'set', 'lo', 'up']);
    child = spawn('ip', ['netns', 'exec', netns, process.execPath, ANSWER, podIp, String(PORT), resourceVersion], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const answering = async (): Promise<boolean> => {
      if (child?.exitCode !== null) throw new Error(`pod-answer.ts exited: ${stderr}`);
      try {
        const res = await request(`http://${podIp}:${String(PORT)}/`);
        await res.body.dump();
        return res.statusCode === 200;
      } catch {
        return false;
      }
    };
    await eventually(`the pod backend on ${podIp} (${net}/30) to answer`, answering, 20_000);
    return { podIp, port: PORT, close };
  } catch (error) {
    close();
    const message = error instanceof Error ? error.message : String(error);
    return `a network namespace could not be set up: ${message.split('\n')[0] ?? message}`;
  }
}
