/**
 * The proxy's HTTPS serving material, from the TLS flags: the files of --tls-cert-file and
 * --tls-private-key-file, checked to belong together before the server starts, or a CA and a
 * certificate made now (--tls-generate). Either way, the CA that apps are told to trust.
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { createSecureContext } from 'node:tls';
import type { ServingTls } from '../server/http/node-server.ts';
import { LOOPBACK_NAMES, generateServingCertificate, pemCertificates } from '../server/tls/serving-certificate.ts';
import { CliError } from './cli-error.ts';
import type { TlsServing } from './options.ts';

export interface ResolvedTls extends ServingTls {
  /** The CA for the apps' kubeconfig, PEM. */
  readonly ca: string;
}

/** Addresses that name every interface, which no certificate can name. */
const UNSPECIFIED = new Set(['0.0.0.0', '::', '0:0:0:0:0:0:0:0']);

/**
 * Reads or makes the serving material. A generated certificate names the loopback names and,
 * when --address is a particular IP, that IP too.
 */
export function resolveServingTls(tls: TlsServing, address: string): ResolvedTls {
  if (tls.kind === 'generate') {
    const ips = isIP(address) !== 0 && !UNSPECIFIED.has(address) && !LOOPBACK_NAMES.ips.includes(address) ? [address] : [];
    return generateServingCertificate({ dnsNames: LOOPBACK_NAMES.dnsNames, ips: [...LOOPBACK_NAMES.ips, ...ips] });
  }
  const cert = readPem(tls.certFile, '--tls-cert-file');
  const key = readPem(tls.keyFile, '--tls-private-key-file');
  const certificates = pemCertificates(cert);
  const last = certificates.at(-1);
  if (last === undefined)
    throw new CliError(`--tls-cert-file ${tls.certFile}: no PEM certificate in it`, 'Give the serving certificate in PEM.');
  try {
    // Throws on a key that is not the certificate's ("key values mismatch") or a malformed one.
    createSecureContext({ cert, key });
    new X509Certificate(last);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    throw new CliError(
      `--tls-cert-file ${tls.certFile} and --tls-private-key-file ${tls.keyFile}: ${detail}`,
      'Give the serving certificate (then its chain) and its own private key, both PEM.',
    );
  }
  // The last certificate of the file is the one clients are told to trust: the chain's root,
  // or the serving certificate itself when it is alone.
  return { cert, key, ca: last };
}

/** The client CA bundle of --client-ca-file, checked to hold at least one certificate that parses. */
export function readClientCa(path: string): string {
  const pem = readPem(path, '--client-ca-file');
  const certificates = pemCertificates(pem);
  try {
    if (certificates.length === 0) throw new Error('no PEM certificate in it');
    for (const c of certificates) new X509Certificate(c);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    throw new CliError(`--client-ca-file ${path}: ${detail}`, 'Give the CA certificates that sign client certificates, in PEM.');
  }
  return pem;
}

function readPem(path: string, flag: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    throw new CliError(`${flag} ${path}: cannot read it: ${detail}`, `Check the path given to ${flag}.`);
  }
}
