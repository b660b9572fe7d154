/**
 * Certificates signed by the test control plane's CA (dev-cluster/pki.ts), which the apiserver
 * trusts for client certificates (--client-ca-file): a client certificate for a user (CN) and its
 * groups (O), as the apiserver reads them, or a serving certificate for loopback.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { ControlPlaneState } from '../../src/cli/dev-cluster/control-plane.ts';

export interface SignedCertificate {
  readonly certFile: string;
  readonly keyFile: string;
  readonly cert: string;
  readonly key: string;
}

/** The `-subj` of a user: CN=name, an O per group (slashes and backslashes escaped for openssl). */
function subject(cn: string, groups: readonly string[]): string {
  const escape = (v: string): string => v.replaceAll('\\', '\\\\').replaceAll('/', '\\/');
  return `/CN=${escape(cn)}${groups.map((g) => `/O=${escape(g)}`).join('')}`;
}

/**
 * A certificate signed by the control plane's CA, in a folder of its own removed when `t` ends:
 * a client certificate for `cn` in `groups`, or (serving) one for 127.0.0.1 and localhost.
 */
export function signedCertificate(
  t: { after(fn: () => void): void },
  cp: ControlPlaneState,
  options: { readonly cn: string; readonly groups?: readonly string[]; readonly serving?: boolean },
): SignedCertificate {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-cert-'));
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  const caKey = join(dirname(cp.caFile), 'ca.key');
  const keyFile = join(dir, 'tls.key');
  const certFile = join(dir, 'tls.crt');
  const ext = join(dir, 'ext.cnf');
  writeFileSync(
    ext,
    options.serving === true ? 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' : 'extendedKeyUsage=clientAuth\n',
  );
  const openssl = (args: string[]): void => {
    execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  };
  openssl([
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    subject(options.cn, options.groups ?? []),
    '-keyout',
    keyFile,
    '-out',
    'tls.csr',
  ]);
  openssl([
    'x509',
    '-req',
    '-in',
    'tls.csr',
    '-CA',
    cp.caFile,
    '-CAkey',
    caKey,
    '-CAcreateserial',
    '-CAserial',
    join(dir, 'ca.srl'),
    '-days',
    '2',
    '-out',
    certFile,
    '-extfile',
    ext,
  ]);
  return { certFile, keyFile, cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
}
