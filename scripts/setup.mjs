// The set-up step of `npm start` and `npm test` (prestart / pretest), so that both work on a fresh
// clone with nothing typed first. Plain JavaScript with no dependencies: it runs on the machine's
// Node (20 here) before node_modules exists.
//
//  1. `npm ci` when node_modules is missing or older than package-lock.json;
//  2. before `npm test` only: builds the local control plane (kube-apiserver, kubectl, etcd) from
//     Go modules when its binaries are not cached yet (~/.cache/kube-cache-proxy/), through the
//     project's own CLI. `npm start` needs it only when no cluster is configured, and then
//     `kube-cache-proxy start` builds it itself (src/cli/start.ts): with a cluster it serves
//     in seconds, with no Go on the machine;
//  3. before `npm test` only: installs Debian's chromium when no Chromium is found (the status
//     page is tested in a real browser, test/helpers/browser.ts), with apt-get when running as
//     root; otherwise it says what to install, and the browser test fails with the same words;
//     and iproute2 when `ip` is missing (tests give the apiserver hosts to reach in network
//     namespaces of their own, test/helpers/netns-host.ts, which needs root).
//
// Nothing needs compiling: Node 24 runs the TypeScript sources directly; only what ships is
// compiled (scripts/build.mjs, run by `npm pack`; see docs/contributing.md, "Choices").
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function run(command, args) {
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit' });
  if (result.error) {
    console.error(`setup: could not run ${command}: ${result.error.message}`);
    process.exit(1);
  }
  if (result.status !== 0) process.exit(result.status ?? 1);
}

const lock = join(root, 'package-lock.json');
const installed = join(root, 'node_modules', '.package-lock.json');
if (!existsSync(installed) || statSync(installed).mtimeMs < statSync(lock).mtimeMs) {
  console.log('setup: installing node_modules (npm ci)...');
  run('npm', ['ci', '--no-audit', '--no-fund']);
}

if (process.env.npm_lifecycle_event === 'pretest' && process.env.KCP_SKIP_CONTROL_PLANE_BUILD !== '1') {
  run(process.execPath, [join(root, 'bin', 'kube-cache-proxy.mjs'), 'dev-cluster', 'build']);
}

/** The paths test/helpers/browser.ts looks at (or $KCP_CHROMIUM). */
const CHROMIUM = ['/usr/lib/chromium/chromium', '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];
const onPath = (name) => (process.env.PATH ?? '').split(delimiter).some((dir) => dir !== '' && existsSync(join(dir, name)));
if (process.env.npm_lifecycle_event === 'pretest' && !process.env.KCP_CHROMIUM && !CHROMIUM.some((path) => existsSync(path))) {
  if (process.getuid?.() === 0 && onPath('apt-get')) {
    console.log('setup: installing chromium for the status page browser test (apt-get install chromium, ~1 min)...');
    run('apt-get', ['update', '-qq']);
    run('apt-get', ['install', '-y', '-qq', 'chromium']);
  } else {
    console.error(
      'setup: Chromium is missing and cannot be installed from here (not root, or no apt-get). The browser test will fail: ' +
        'install it with `sudo apt-get install chromium`, or set KCP_CHROMIUM to a Chromium or Chrome binary.',
    );
  }
}

if (process.env.npm_lifecycle_event === 'pretest' && !onPath('ip')) {
  if (process.getuid?.() === 0 && onPath('apt-get')) {
    console.log("setup: installing iproute2 for the tests' network-namespace hosts (apt-get install iproute2)...");
    run('apt-get', ['update', '-qq']);
    run('apt-get', ['install', '-y', '-qq', 'iproute2']);
  } else {
    console.error(
      'setup: `ip` (iproute2) is missing: the tests that need a host other than loopback will fail. Install it as root: apt-get install iproute2.',
    );
  }
}
