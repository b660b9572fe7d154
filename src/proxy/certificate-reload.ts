/**
 * Serving certificate, key and client CA reloaded when their files change (the client CA alone
 * with --tls-generate, whose pair is made in memory), as kube-apiserver's
 * dynamic certificate files are (k8s.io/apiserver pkg/server/dynamiccertificates:
 * DynamicCertKeyPairContent, DynamicFileCAContent): a cert-manager renewal or a Secret volume's
 * update reaches the proxy without a restart.
 *
 * Every RELOAD_INTERVAL_MS the files are stat'ed (following symlinks, so a Secret volume's
 * `..data` swap shows as a new inode); when one changed, all are read again, checked to belong
 * together (the key is the certificate's, the CA parses) and handed to the server's next
 * handshakes (tls.Server setSecureContext). Connections already open keep the context they began
 * with, so a watch opened before a renewal goes on. A set that does not check out is logged and the
 * current one kept, as the apiserver keeps serving its last good pair.
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import type { SecureContextOptions } from 'node:tls';
import { pemCertificates } from '../server/tls/serving-certificate.ts';

/** How often the files are looked at: well within a minute, the bound an operator is told. */
export const RELOAD_INTERVAL_MS = 10_000;

/** The files followed: the serving pair (undefined with --tls-generate, whose pair is made in memory) and the client CA. */
export interface ServingFiles {
  readonly pair?: { readonly certFile: string; readonly keyFile: string } | undefined;
  /** --client-ca-file; undefined: none. */
  readonly clientCaFile?: string | undefined;
}

/** What the reloaded context is given: the files' contents, PEM. */
export interface ServingMaterial {
  readonly cert: string;
  readonly key: string;
  readonly clientCa: string | undefined;
}

export interface CertificateReloadOptions {
  readonly files: ServingFiles;
  /** The pair served when the files hold none (--tls-generate's). */
  readonly generated?: { readonly cert: string; readonly key: string } | undefined;
  /** Installs new material (the server's setSecureContext with the proxy's TLS settings). */
  readonly install: (material: ServingMaterial) => void;
  readonly log: (level: 'info' | 'warn', fields: Record<string, unknown>, message: string) => void;
  readonly intervalMs?: number;
}

export interface CertificateReload {
  /** Looks at the files now (the timer does so every interval). */
  check(): void;
  stop(): void;
}

/** A file's identity as far as a change goes. */
function stamp(path: string): string {
  try {
    const s = statSync(path);
    return `${String(s.ino)}:${String(s.size)}:${String(s.mtimeMs)}`;
  } catch (error) {
    return `missing: ${error instanceof Error ? error.message : String(error)}`;
  }
}

/** Reads the files (the generated pair for what none holds) and checks them as the start does; throws what is wrong. */
function readMaterial(files: ServingFiles, generated: { readonly cert: string; readonly key: string } | undefined): ServingMaterial {
  const cert = files.pair === undefined ? (generated?.cert ?? '') : readFileSync(files.pair.certFile, 'utf8');
  const key = files.pair === undefined ? (generated?.key ?? '') : readFileSync(files.pair.keyFile, 'utf8');
  const clientCa = files.clientCaFile === undefined ? undefined : readFileSync(files.clientCaFile, 'utf8');
  const leaf = pemCertificates(cert)[0];
  if (leaf === undefined) throw new Error(`${files.pair?.certFile ?? 'the serving certificate'}: no PEM certificate in it`);
  new X509Certificate(leaf);
  const options: SecureContextOptions = { cert, key };
  if (clientCa !== undefined) {
    const cas = pemCertificates(clientCa);
    if (cas.length === 0) throw new Error(`${files.clientCaFile ?? ''}: no PEM certificate in it`);
    for (const ca of cas) new X509Certificate(ca);
    options.ca = clientCa;
  }
  // Throws on a key that is not the certificate's ("key values mismatch").
  createSecureContext(options);
  return { cert, key, clientCa };
}

export function watchServingFiles(options: CertificateReloadOptions): CertificateReload {
  const { files, install, log } = options;
  const paths = [
    ...(files.pair === undefined ? [] : [files.pair.certFile, files.pair.keyFile]),
    ...(files.clientCaFile === undefined ? [] : [files.clientCaFile]),
  ];
  let seen = paths.map(stamp).join('|');
  const check = (): void => {
    const now = paths.map(stamp).join('|');
    if (now === seen) return;
    // Whatever comes of it, this state of the files is dealt with: a bad set is logged once, and
    // looked at again when the files change again.
    seen = now;
    let material: ServingMaterial;
    try {
      material = readMaterial(files, options.generated);
    } catch (error) {
      log(
        'warn',
        { err: error instanceof Error ? error.message : String(error), ...files },
        'serving certificate files changed but do not check out: still serving the current ones',
      );
      return;
    }
    install(material);
    const leaf = new X509Certificate(pemCertificates(material.cert)[0] ?? '');
    log('info', { subject: leaf.subject, notAfter: leaf.validTo, ...files }, 'serving certificate and client CA reloaded');
  };
  const timer = setInterval(check, options.intervalMs ?? RELOAD_INTERVAL_MS);
  timer.unref();
  return {
    check,
    stop: () => {
      clearInterval(timer);
    },
  };
}
