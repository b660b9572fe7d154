/**
 * Apps find the proxy without hacks: `proxy --tls-generate --write-kubeconfig PATH` serves HTTPS
 * with a CA it makes and writes a kubeconfig that client-node (which refuses plain HTTP unless TLS
 * checks are off), kubectl and curl use as they are, against the real apiserver behind it; the
 * same with a certificate and key given as files.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { CoreV1Api, KubeConfig, V1Container, V1ObjectMeta, V1Pod, V1PodSpec, loadYaml, makeInformer } from '@kubernetes/client-node';
import { request } from 'undici';
import type { Dispatcher } from 'undici';
import { runCommand, spawnCli } from '../../helpers/cli.ts';
import type { CliRun, RunningCli } from '../../helpers/cli.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';

const shared = useSharedAdmin();
const DEPLOY = fileURLToPath(new URL('../../../deploy/', import.meta.url));
/** Where deploy/ has the sidecar write the kubeconfig, and the app read it. */
const DEPLOYED_PATH = '/var/run/kube-cache-proxy/kubeconfig';

interface HttpGetProbe {
  readonly httpGet?: { readonly path: string; readonly port: string; readonly scheme?: string };
}
interface ProbedContainer {
  readonly name: string;
  readonly command?: string[];
  readonly env?: { name: string; value?: string }[];
  readonly ports?: { name: string; containerPort: number }[];
  readonly startupProbe?: HttpGetProbe;
  readonly livenessProbe?: HttpGetProbe;
  readonly readinessProbe?: HttpGetProbe;
}
interface PodTemplate {
  readonly spec: { template: { spec: { initContainers?: ProbedContainer[]; containers?: ProbedContainer[] } } };
}

/** A container of a deploy/ manifest. */
function deployedContainer(file: string, name: string): ProbedContainer {
  const manifest = loadYaml<PodTemplate>(readFileSync(join(DEPLOY, file), 'utf8'));
  const { spec } = manifest.spec.template;
  const found = [...(spec.initContainers ?? []), ...(spec.containers ?? [])].find((c) => c.name === name);
  assert.ok(found !== undefined, `${name} in ${file}`);
  return found;
}

/** Runs a manifest's `node ...` command here, with the kubeconfig at `path` instead of the pod's. */
function runDeployed(command: readonly string[], path: string, env: NodeJS.ProcessEnv = {}): Promise<CliRun> {
  const [bin, ...args] = command;
  assert.equal(bin, 'node');
  const local = args.map((a) => a.replaceAll(DEPLOYED_PATH, path));
  return new Promise((resolve) => {
    execFile(process.execPath, local, { env: { ...process.env, ...env, KUBECONFIG: path }, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
    });
  });
}

interface Kubeconfig {
  readonly clusters: { readonly cluster: { readonly server: string; readonly 'certificate-authority-data': string } }[];
}

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-app-kubeconfig-'));
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

/** The proxy as a sidecar runs it, until the test ends (SIGTERM, then it must exit 0). */
async function startProxy(t: TestContext, args: readonly string[]): Promise<{ cli: RunningCli; address: string }> {
  const cli = spawnCli(['proxy', '--kubeconfig', shared.cp.kubeconfig, '--port', '0', '--log-level', 'warn', ...args]);
  t.after(async () => {
    cli.child.kill('SIGTERM');
    assert.equal(await cli.exited, 0, cli.output());
  });
  await eventually('the serving line', () => /Starting to serve on \S+/.test(cli.output()) || cli.child.exitCode !== null, 30_000);
  const address = /Starting to serve on (127\.0\.0\.1:\d+)/.exec(cli.output())?.[1];
  assert.ok(address !== undefined, cli.output());
  return { cli, address };
}

/** A pod as an app builds one with client-node's model classes. */
function pod(name: string): V1Pod {
  const body = new V1Pod();
  body.metadata = Object.assign(new V1ObjectMeta(), { name, labels: { app: 'app-kubeconfig' } });
  body.spec = Object.assign(new V1PodSpec(), { containers: [Object.assign(new V1Container(), { name: 'app', image: 'busybox' })] });
  return body;
}

/** Resolves with the first object the informer adds whose name is `name`. */
function added(informer: ReturnType<typeof makeInformer<V1Pod>>, name: string): Promise<V1Pod> {
  return new Promise((resolve, reject) => {
    informer.on('add', (obj) => {
      if (obj.metadata?.name === name) resolve(obj);
    });
    informer.on('error', (error: unknown) => {
      reject(error instanceof Error ? error : new Error(String(error)));
    });
  });
}

test(
  'proxy --tls-generate --write-kubeconfig: client-node (KUBECONFIG, no skipTLSVerify) lists and runs an informer; kubectl and curl use the file',
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const dir = tempDir(t);
    const path = join(dir, 'kubeconfig');
    const sidecar = deployedContainer('sidecar/sidecar.yaml', 'kube-cache-proxy');
    // The kubelet's probes: an HTTP GET of the probe's path on the container's port of that name,
    // the metrics listener, which the manifest opens on every interface (its port made free here).
    const bind = sidecar.env?.find((e) => e.name === 'KCP_METRICS_BIND_ADDRESS')?.value;
    assert.equal(bind, `:${String(sidecar.ports?.find((p) => p.name === 'metrics')?.containerPort)}`);
    const probes = [sidecar.startupProbe, sidecar.livenessProbe, sidecar.readinessProbe].map((probe) => probe?.httpGet);
    const { address, cli } = await startProxy(t, ['--tls-generate', '--write-kubeconfig', path, '--metrics-bind-address', ':0']);
    await eventually('the metrics line', () => /Serving metrics and health on /.test(cli.output()), 10_000);
    const metricsPort = /Serving metrics and health on \S*:(\d+)/.exec(cli.output())?.[1];
    assert.ok(metricsPort !== undefined, cli.output());
    // Its startup probe passing means the apps' kubeconfig is written: the listener opens after it.
    assert.ok(existsSync(path));
    for (const probe of probes) {
      assert.ok(probe !== undefined && probe.port === 'metrics' && (probe.scheme ?? 'HTTP') === 'HTTP', JSON.stringify(probe));
      const res: Dispatcher.ResponseData = await request(`http://127.0.0.1:${metricsPort}${probe.path}`);
      assert.equal(res.statusCode, 200, probe.path);
      assert.equal(await res.body.text(), 'ok');
    }

    // Written before the serving line, whole (no temporary file left), readable by other users.
    assert.deepEqual(readdirSync(dir), ['kubeconfig']);
    assert.equal(statSync(path).mode & 0o777, 0o644);
    const written = JSON.parse(readFileSync(path, 'utf8')) as Kubeconfig;
    const cluster = written.clusters[0]?.cluster;
    assert.equal(cluster?.server, `https://${address}`);
    const caPem = Buffer.from(cluster['certificate-authority-data'], 'base64').toString();
    assert.equal(new X509Certificate(caPem).ca, true);

    // (a) client-node from $KUBECONFIG, as an app in the pod loads it.
    const saved = process.env.KUBECONFIG;
    process.env.KUBECONFIG = path;
    const kc = new KubeConfig();
    try {
      kc.loadFromDefault();
    } finally {
      if (saved === undefined) delete process.env.KUBECONFIG;
      else process.env.KUBECONFIG = saved;
    }
    assert.equal(kc.getCurrentCluster()?.server, `https://${address}`);
    assert.notEqual(kc.getCurrentCluster()?.skipTLSVerify, true);
    const api = kc.makeApiClient(CoreV1Api);
    assert.deepEqual((await api.listNamespacedPod({ namespace: ns })).items, []);

    const informer = makeInformer<V1Pod>(kc, `/api/v1/namespaces/${ns}/pods`, () => api.listNamespacedPod({ namespace: ns }));
    const seen = added(informer, 'through-the-proxy');
    await informer.start();
    t.after(() => informer.stop());
    const created = await api.createNamespacedPod({ namespace: ns, body: pod('through-the-proxy') });
    const event = await seen;
    assert.equal(event.metadata?.uid, created.metadata?.uid);
    assert.equal(informer.list(ns).length, 1);
    // Its watch closed now, so the proxy's shutdown need not wait out its grace period for it.
    await informer.stop();

    // deploy/example's app, its script as written, one round.
    const app = deployedContainer('example/pod-lister.yaml', 'app');
    const script = (app.command ?? []).map((a) =>
      a.replace('for (;;) {', 'for (let round = 0; round < 1; round++) {').replace('10_000', '0'),
    );
    const round = await runDeployed(script, path, { NS: ns });
    assert.equal(round.code, 0, round.stderr);
    assert.equal(round.stdout, `GET pods of ${ns} through https://${address}: 1 pods\n`);

    // (b) kubectl with the file alone: no prompt for a username (stdin is not a terminal).
    const kubectl = await runCommand(shared.cp.binaries.kubectl, ['--kubeconfig', path, 'get', 'pods', '-n', ns, '-o', 'name']);
    assert.equal(kubectl.code, 0, kubectl.stderr);
    assert.equal(kubectl.stdout, 'pod/through-the-proxy\n');

    // (c) curl trusts the CA of the file, and only it.
    const caFile = join(dir, 'ca.crt');
    writeFileSync(caFile, caPem);
    const url = `https://${address}/api/v1/namespaces/${ns}/pods/through-the-proxy`;
    const curl = await runCommand('curl', ['-sS', '--fail', '--cacert', caFile, url]);
    assert.equal(curl.code, 0, curl.stderr);
    assert.equal((JSON.parse(curl.stdout) as V1Pod).metadata?.uid, created.metadata?.uid);
    const untrusted = await runCommand('curl', ['-sS', url]);
    // 60: CURLE_PEER_FAILED_VERIFICATION.
    assert.equal(untrusted.code, 60, untrusted.stderr);
  },
);

test(
  'proxy --tls-cert-file --tls-private-key-file: serves the given certificate; the written kubeconfig trusts its chain root',
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const dir = tempDir(t);
    // A CA and a serving certificate made by openssl, as an operator makes them.
    const openssl = async (args: string[]): Promise<void> => {
      const run = await runCommand('openssl', args);
      assert.equal(run.code, 0, run.stderr);
    };
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2'];
    await openssl(['req', '-x509', ...ec, '-subj', '/CN=test-ca', '-keyout', join(dir, 'ca.key'), '-out', join(dir, 'ca.crt')]);
    await openssl([
      'req',
      '-x509',
      ...ec,
      '-CA',
      join(dir, 'ca.crt'),
      '-CAkey',
      join(dir, 'ca.key'),
      '-subj',
      '/CN=kube-cache-proxy',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '-addext',
      'basicConstraints=critical,CA:FALSE',
      '-keyout',
      join(dir, 'tls.key'),
      '-out',
      join(dir, 'leaf.crt'),
    ]);
    const caPem = readFileSync(join(dir, 'ca.crt'), 'utf8');
    writeFileSync(join(dir, 'tls.crt'), readFileSync(join(dir, 'leaf.crt'), 'utf8') + caPem);
    const path = join(dir, 'app', 'kubeconfig');
    const missingDir = spawnCli([
      'proxy',
      '--kubeconfig',
      shared.cp.kubeconfig,
      '--port',
      '0',
      '--tls-cert-file',
      join(dir, 'tls.crt'),
      '--tls-private-key-file',
      join(dir, 'tls.key'),
      '--write-kubeconfig',
      path,
    ]);
    assert.equal(await missingDir.exited, 1);
    assert.match(missingDir.output(), /cannot write the kubeconfig for apps to .*app\/kubeconfig/);

    mkdirSync(join(dir, 'app'));
    const { address } = await startProxy(t, [
      '--tls-cert-file',
      join(dir, 'tls.crt'),
      '--tls-private-key-file',
      join(dir, 'tls.key'),
      '--write-kubeconfig',
      path,
    ]);
    const written = JSON.parse(readFileSync(path, 'utf8')) as Kubeconfig;
    assert.equal(Buffer.from(written.clusters[0]?.cluster['certificate-authority-data'] ?? '', 'base64').toString(), caPem);

    const kc = new KubeConfig();
    kc.loadFromFile(path);
    const api = kc.makeApiClient(CoreV1Api);
    await api.createNamespacedPod({ namespace: ns, body: pod('given-certificate') });
    const names = (await api.listNamespacedPod({ namespace: ns })).items.map((p) => p.metadata?.name);
    assert.deepEqual(names, ['given-certificate']);

    const curl = await runCommand('curl', [
      '-sS',
      '--fail',
      '--cacert',
      join(dir, 'ca.crt'),
      `https://${address}/api/v1/namespaces/${ns}/pods`,
    ]);
    assert.equal(curl.code, 0, curl.stderr);
    assert.deepEqual(
      (JSON.parse(curl.stdout) as { items: V1Pod[] }).items.map((p) => p.metadata?.name),
      ['given-certificate'],
    );
  },
);

test(
  "proxy: a non-loopback --address without TLS, or a key that is not the certificate's, is refused at start",
  { timeout: 30_000 },
  async (t) => {
    const plain = spawnCli(['proxy', '--address', '0.0.0.0', '--port', '0']);
    assert.equal(await plain.exited, 1);
    assert.match(plain.output(), /--address "0\.0\.0\.0": not a loopback address/);
    assert.match(plain.output(), /--tls-generate/);

    const dir = tempDir(t);
    const openssl = async (args: string[]): Promise<void> => {
      const run = await runCommand('openssl', args);
      assert.equal(run.code, 0, run.stderr);
    };
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1'];
    await openssl(['req', '-x509', ...ec, '-subj', '/CN=a', '-keyout', join(dir, 'a.key'), '-out', join(dir, 'a.crt')]);
    await openssl(['req', '-x509', ...ec, '-subj', '/CN=b', '-keyout', join(dir, 'b.key'), '-out', join(dir, 'b.crt')]);
    const mismatched = spawnCli([
      'proxy',
      '--kubeconfig',
      shared.cp.kubeconfig,
      '--port',
      '0',
      '--tls-cert-file',
      join(dir, 'a.crt'),
      '--tls-private-key-file',
      join(dir, 'b.key'),
    ]);
    assert.equal(await mismatched.exited, 1);
    assert.match(mismatched.output(), /--tls-cert-file .*a\.crt and --tls-private-key-file .*b\.key: .*mismatch/);
  },
);
