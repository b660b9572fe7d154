/**
 * A host other than loopback for tests that need the apiserver to reach something: a network
 * namespace of the test's own, joined to the machine's by a veth pair on a /30 of 10.213.0.0/16,
 * with an HTTP server of the test's inside it. The apiserver proxies `pods/NAME/proxy` only to a
 * global unicast pod IP (pkg/registry/core/pod/strategy.go ResourceLocation: "address not
 * allowed"), so a pod whose status.podIP is this host's address is served by the test's server,
 * as a kubelet-run pod would be. Needs root (`ip netns`, `ip link`); everything made is removed
 * after the test.
 */
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import type { TestContext } from 'node:test';

export interface NetnsHttpServer {
  /** The host's address, reachable from the machine (and so from the apiserver). */
  readonly address: string;
  readonly port: number;
}

function ip(...args: string[]): void {
  const result = spawnSync('ip', args, { encoding: 'utf8' });
  if (result.error !== undefined)
    throw new Error(`ip ${args.join(' ')}: ${result.error.message} (iproute2 is needed: apt-get install iproute2)`);
  if (result.status !== 0)
    throw new Error(`ip ${args.join(' ')} failed (${String(result.status)}): ${result.stderr.trim()} (network namespaces need root)`);
}

/** A host in a network namespace of the test's own, joined to the machine by a veth pair. */
export interface NetnsHost {
  /** The namespace's name (`ip netns exec NAME ...`). */
  readonly name: string;
  /** The machine's address on the pair, as the host reaches it. */
  readonly outside: string;
  /** The host's address, as the machine (and so the apiserver) reaches it. */
  readonly inside: string;
}

/** Makes a host: a namespace, its pair on a /30 of its own (.1 the machine's side, .2 the host's). Removed after `t`. */
export function newNetnsHost(t: TestContext): NetnsHost {
  const name = `kcp-${randomBytes(4).toString('hex')}`;
  const block = randomInt(0, 16384) * 4;
  const net = `10.213.${String(Math.floor(block / 256))}.${String(block % 256)}`;
  const prefix = net.slice(0, net.lastIndexOf('.') + 1);
  const last = block % 256;
  const outside = `${prefix}${String(last + 1)}`;
  const inside = `${prefix}${String(last + 2)}`;
  const veth = `v${name.slice(4)}`;
  t.after(() => {
    spawnSync('ip', ['link', 'del', `${veth}a`]);
    spawnSync('ip', ['netns', 'del', name]);
  });
  ip('netns', 'add', name);
  ip('link', 'add', `${veth}a`, 'type', 'veth', 'peer', 'name', `${veth}b`);
  ip('link', 'set', `${veth}b`, 'netns', name);
  ip('addr', 'add', `${outside}/30`, 'dev', `${veth}a`);
  ip('link', 'set', `${veth}a`, 'up');
  ip('netns', 'exec', name, 'ip', 'addr', 'add', `${inside}/30`, 'dev', `${veth}b`);
  ip('netns', 'exec', name, 'ip', 'link', 'set', `${veth}b`, 'up');
  ip('netns', 'exec', name, 'ip', 'link', 'set', 'lo', 'up');
  return { name, outside, inside };
}

/**
 * Starts `handler` (the source of a `(req, res) => void` function for node:http, run in a Node
 * process of its own inside the namespace) on `port` of a new host. Stopped and removed after `t`.
 */
export async function startNetnsHttpServer(t: TestContext, handler: string, port = 8080): Promise<NetnsHttpServer> {
  const { name, inside } = newNetnsHost(t);
  const running: { child?: ChildProcess } = {};
  t.after(() => running.child?.kill('SIGKILL'));
  const source = `require('node:http').createServer(${handler}).listen(${String(port)}, '${inside}', () => console.log('ready'));`;
  const started = spawn('ip', ['netns', 'exec', name, process.execPath, '-e', source], { stdio: ['ignore', 'pipe', 'pipe'] });
  running.child = started;
  await new Promise<void>((resolve, reject) => {
    let errors = '';
    started.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
    started.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) resolve();
    });
    started.once('exit', (code) => {
      reject(new Error(`the server in ${name} exited (${String(code)}) before it listened: ${errors}`));
    });
  });
  return { address: inside, port };
}
