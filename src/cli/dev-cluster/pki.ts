/**
 * Certificates and keys for the local control plane, made with the openssl command line (Node
 * can make keys but not X.509 certificates).
 *
 * The apiserver's own self-signed certificate (--cert-dir) is issued for the advertise address and
 * the `kubernetes.default.svc` names only, never 127.0.0.1, so a small CA signs a serving
 * certificate for 127.0.0.1 and localhost, which clients then verify for real.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CliError } from '../../proxy/cli-error.ts';

export interface Pki {
  readonly caCert: string;
  readonly servingCert: string;
  readonly servingKey: string;
  /** RSA key for signing service-account tokens; the apiserver derives the public key from it. */
  readonly serviceAccountKey: string;
}

function openssl(cwd: string, args: readonly string[]): void {
  const result = spawnSync('openssl', args, { cwd, encoding: 'utf8' });
  if (result.error) {
    throw new CliError(
      "openssl was not found on PATH: it makes the local control plane's certificates.",
      'Install it (Debian: apt-get install openssl) and try again.',
    );
  }
  if (result.status !== 0) {
    throw new CliError(
      `openssl ${args[0] ?? ''} failed: ${result.stderr.trim()}`,
      'Check that openssl works (`openssl version`) and that the directory is writable.',
    );
  }
}

export function createPki(dir: string): Pki {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const days = '3650';
  openssl(dir, [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    days,
    '-subj',
    '/CN=kube-cache-proxy-dev-ca',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
  ]);
  openssl(dir, [
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    '/CN=kube-apiserver',
    '-keyout',
    'apiserver.key',
    '-out',
    'apiserver.csr',
  ]);
  writeFileSync(join(dir, 'apiserver.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    'apiserver.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-days',
    days,
    '-out',
    'apiserver.crt',
    '-extfile',
    'apiserver.ext',
  ]);
  openssl(dir, ['genrsa', '-out', 'sa.key', '2048']);
  return {
    caCert: join(dir, 'ca.crt'),
    servingCert: join(dir, 'apiserver.crt'),
    servingKey: join(dir, 'apiserver.key'),
    serviceAccountKey: join(dir, 'sa.key'),
  };
}
