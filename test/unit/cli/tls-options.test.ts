import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CliError } from '../../../src/proxy/cli-error.ts';
import { isLoopback, parseProxyOptions } from '../../../src/cli/proxy-options.ts';

function fails(argv: string[], env: NodeJS.ProcessEnv, message: RegExp): void {
  assert.throws(
    () => parseProxyOptions(argv, env),
    (error: unknown) => error instanceof CliError && message.test(error.message) && error.hint !== undefined,
  );
}

test('TLS options: plain HTTP by default; files, or a generated certificate, by flag or KCP_ variable', () => {
  assert.equal(parseProxyOptions([], {}).tls, undefined);
  assert.equal(parseProxyOptions([], {}).writeKubeconfig, undefined);
  assert.deepEqual(parseProxyOptions(['--tls-cert-file', '/c.pem', '--tls-private-key-file', '/k.pem'], {}).tls, {
    kind: 'files',
    certFile: '/c.pem',
    keyFile: '/k.pem',
  });
  assert.deepEqual(parseProxyOptions([], { KCP_TLS_CERT_FILE: '/c.pem', KCP_TLS_PRIVATE_KEY_FILE: '/k.pem' }).tls, {
    kind: 'files',
    certFile: '/c.pem',
    keyFile: '/k.pem',
  });
  assert.deepEqual(parseProxyOptions(['--tls-generate'], {}).tls, { kind: 'generate' });
  // Go's strconv.ParseBool spellings.
  for (const yes of ['true', '1', 'T', 'TRUE', 'True'])
    assert.deepEqual(parseProxyOptions([], { KCP_TLS_GENERATE: yes }).tls, { kind: 'generate' });
  for (const no of ['false', '0', 'F']) assert.equal(parseProxyOptions([], { KCP_TLS_GENERATE: no }).tls, undefined);
  assert.equal(parseProxyOptions([], { KCP_TLS_GENERATE: '' }).tls, undefined, 'an empty variable is unset');
  const options = parseProxyOptions(['--tls-generate', '--write-kubeconfig', '/shared/kubeconfig'], {});
  assert.equal(options.writeKubeconfig, '/shared/kubeconfig');
  assert.equal(parseProxyOptions([], { KCP_TLS_GENERATE: 'true', KCP_WRITE_KUBECONFIG: '/k' }).writeKubeconfig, '/k');
});

test('TLS options: incomplete or conflicting TLS flags, and a kubeconfig without HTTPS, are CliErrors', () => {
  fails(['--tls-cert-file', '/c.pem'], {}, /--tls-cert-file "\/c.pem": --tls-cert-file and --tls-private-key-file go together/);
  fails([], { KCP_TLS_PRIVATE_KEY_FILE: '/k.pem' }, /KCP_TLS_PRIVATE_KEY_FILE="\/k.pem": .* go together/);
  fails(
    ['--tls-generate', '--tls-cert-file', '/c', '--tls-private-key-file', '/k'],
    {},
    /--tls-generate: cannot generate a certificate and use --tls-cert-file/,
  );
  fails([], { KCP_TLS_GENERATE: 'yes' }, /KCP_TLS_GENERATE="yes": not a boolean/);
  fails(['--write-kubeconfig', '/k'], {}, /--write-kubeconfig "\/k": the kubeconfig for apps is written for HTTPS only/);
  fails(['--tls-generate', '--write-kubeconfig', '/k', '--unix-socket', '/s'], {}, /a kubeconfig cannot name a Unix socket/);
});

test('TLS options: a non-loopback --address needs TLS and shared mode; loopback, and a Unix socket, do not', () => {
  fails(['--address', '0.0.0.0'], {}, /--address "0.0.0.0": not a loopback address, and the proxy would serve plain HTTP there/);
  fails([], { KCP_ADDRESS: '10.1.2.3' }, /KCP_ADDRESS="10.1.2.3": not a loopback address/);
  fails(['--address', '::'], {}, /not a loopback address/);
  fails(['--address', '::', '--shared'], {}, /not a loopback address, and the proxy would serve plain HTTP there/);
  fails(
    ['--address', '0.0.0.0', '--tls-generate'],
    {},
    /--address "0.0.0.0": not a loopback address, and the proxy would serve everyone who connects with its own credentials/,
  );
  assert.equal(parseProxyOptions(['--address', '0.0.0.0', '--tls-generate', '--shared'], {}).address, '0.0.0.0');
  assert.equal(parseProxyOptions(['--address', '10.1.2.3', '--tls-generate'], { KCP_SHARED: 'true' }).address, '10.1.2.3');
  assert.equal(parseProxyOptions(['--address', '::1'], {}).address, '::1');
  assert.equal(parseProxyOptions(['--address', '0.0.0.0', '--unix-socket', '/s'], {}).unixSocket, '/s');
  for (const address of ['127.0.0.1', '127.1.2.3', '::1', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1', 'localhost']) {
    assert.equal(isLoopback(address), true, address);
  }
  for (const address of ['0.0.0.0', '10.0.0.1', '::', '::2', '::ffff:10.0.0.1', 'fe80::1', 'example.com', '128.0.0.1']) {
    assert.equal(isLoopback(address), false, address);
  }
});
