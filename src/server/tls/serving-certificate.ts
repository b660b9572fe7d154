/**
 * A CA and a serving certificate it signs, made at start for `--tls-generate`, as the apiserver
 * makes its own when given no --tls-cert-file (client-go's cert.GenerateSelfSignedCertKey: a CA,
 * then a certificate for the hosts and IPs signed by it; a CA alone cannot be the serving
 * certificate, since Go's verifier will not take a CA's certificate as a server's).
 *
 * Keys are ECDSA P-256 (every client in question verifies them: Go, OpenSSL, Node, Python, curl).
 * The certificates carry what strict verifiers ask for (OpenSSL's X509_STRICT, which Python 3.13's
 * default context turns on): basicConstraints and keyUsage, critical; subject and authority key
 * identifiers; the serving names in subjectAltName only (Go ignores the CN). The CA's private key
 * is dropped once it has signed: nothing else can ever be issued under this CA.
 */
import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { isIP } from 'node:net';
import {
  bitString,
  boolean,
  explicit,
  implicit,
  namedBits,
  octetString,
  oid,
  sequence,
  set,
  smallInteger,
  time,
  unsignedInteger,
  utf8String,
} from './der.ts';

/** PEM texts, as node:tls and a kubeconfig take them. */
export interface ServingCertificate {
  /** The serving certificate. */
  readonly cert: string;
  /** Its private key (PKCS#8). */
  readonly key: string;
  /** The CA that signed it: what clients trust (a kubeconfig's certificate-authority-data). */
  readonly ca: string;
}

export interface ServingCertificateOptions {
  /** DNS names the certificate serves. */
  readonly dnsNames: readonly string[];
  /** IP addresses (v4 or v6) it serves. */
  readonly ips: readonly string[];
  /** Issue time; tests pass their own. */
  readonly now?: Date;
}

/** The names a loopback proxy is reached by (client-go's self-signed certificates add the same). */
export const LOOPBACK_NAMES: Pick<ServingCertificateOptions, 'dnsNames' | 'ips'> = {
  dnsNames: ['localhost'],
  ips: ['127.0.0.1', '::1'],
};

/** Backdated for clocks behind ours (client-go's GenerateSelfSignedCertKeyWithFixtures: one hour). */
const BACKDATE_MS = 60 * 60 * 1000;
/**
 * Ten years: the pair is made fresh at each start and lives as long as the process, so a
 * shorter life would only let a long-running sidecar's certificate expire under its clients; the
 * CA key, dropped after signing, cannot be stolen to issue more.
 */
const VALIDITY_MS = 10 * 365 * 24 * 60 * 60 * 1000;

const OID = {
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  commonName: '2.5.4.3',
  subjectKeyIdentifier: '2.5.29.14',
  keyUsage: '2.5.29.15',
  subjectAltName: '2.5.29.17',
  basicConstraints: '2.5.29.19',
  authorityKeyIdentifier: '2.5.29.35',
  extKeyUsage: '2.5.29.37',
  serverAuth: '1.3.6.1.5.5.7.3.1',
} as const;

/** KeyUsage's named bits (RFC 5280 4.2.1.3). */
const KEY_USAGE = { digitalSignature: 0, keyCertSign: 5, cRLSign: 6 } as const;

export function generateServingCertificate(options: ServingCertificateOptions): ServingCertificate {
  const now = options.now ?? new Date();
  const notBefore = new Date(now.getTime() - BACKDATE_MS);
  const notAfter = new Date(now.getTime() + VALIDITY_MS);
  const stamp = String(Math.floor(now.getTime() / 1000));
  const ca = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const serving = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const caName = name(`kube-cache-proxy-ca@${stamp}`);
  const caKeyId = keyIdentifier(ca.publicKey);
  const caCert = certificate({
    issuer: caName,
    subject: caName,
    notBefore,
    notAfter,
    publicKey: ca.publicKey,
    signingKey: ca.privateKey,
    extensions: [
      extension(OID.basicConstraints, true, sequence(boolean(true))),
      extension(OID.keyUsage, true, namedBits([KEY_USAGE.keyCertSign, KEY_USAGE.cRLSign])),
      extension(OID.subjectKeyIdentifier, false, octetString(caKeyId)),
    ],
  });
  const names = [
    ...options.dnsNames.map((dns) => implicit(2, Buffer.from(dns, 'latin1'))),
    ...options.ips.map((ip) => implicit(7, ipBytes(ip))),
  ];
  const servingCert = certificate({
    issuer: caName,
    subject: name(`kube-cache-proxy@${stamp}`),
    notBefore,
    notAfter,
    publicKey: serving.publicKey,
    signingKey: ca.privateKey,
    extensions: [
      extension(OID.basicConstraints, true, sequence()),
      extension(OID.keyUsage, true, namedBits([KEY_USAGE.digitalSignature])),
      extension(OID.extKeyUsage, false, sequence(oid(OID.serverAuth))),
      extension(OID.subjectKeyIdentifier, false, octetString(keyIdentifier(serving.publicKey))),
      extension(OID.authorityKeyIdentifier, false, sequence(implicit(0, caKeyId))),
      extension(OID.subjectAltName, false, sequence(...names)),
    ],
  });
  return {
    cert: pem(servingCert),
    key: serving.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    ca: pem(caCert),
  };
}

interface CertificateFields {
  readonly issuer: Buffer;
  readonly subject: Buffer;
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly publicKey: KeyObject;
  readonly signingKey: KeyObject;
  readonly extensions: readonly Buffer[];
}

/** RFC 5280 4.1: a v3 TBSCertificate, signed with ECDSA over SHA-256. */
function certificate(fields: CertificateFields): Buffer {
  const algorithm = sequence(oid(OID.ecdsaWithSha256));
  const tbs = sequence(
    explicit(0, smallInteger(2)),
    serialNumber(),
    algorithm,
    fields.issuer,
    sequence(time(fields.notBefore), time(fields.notAfter)),
    fields.subject,
    fields.publicKey.export({ type: 'spki', format: 'der' }),
    explicit(3, sequence(...fields.extensions)),
  );
  const signature = sign('sha256', tbs, { key: fields.signingKey, dsaEncoding: 'der' });
  return sequence(tbs, algorithm, bitString(signature));
}

/** 16 random octets, positive and non-zero (RFC 5280 4.1.2.2: at most 20, unique per CA). */
function serialNumber(): Buffer {
  const bytes = randomBytes(16);
  bytes[0] = ((bytes[0] ?? 0) & 0x7f) | 0x01;
  return unsignedInteger(bytes);
}

/** A Name of one CN. */
function name(commonName: string): Buffer {
  return sequence(set(sequence(oid(OID.commonName), utf8String(commonName))));
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return critical ? sequence(oid(id), boolean(true), octetString(value)) : sequence(oid(id), octetString(value));
}

/** RFC 5280 4.2.1.2 method (1): SHA-1 of the subjectPublicKey bits (the EC point). */
function keyIdentifier(publicKey: KeyObject): Buffer {
  const jwk = publicKey.export({ format: 'jwk' });
  const point = Buffer.concat([Buffer.from([0x04]), Buffer.from(jwk.x ?? '', 'base64url'), Buffer.from(jwk.y ?? '', 'base64url')]);
  return createHash('sha1').update(point).digest();
}

/** An iPAddress GeneralName's octets: 4 for IPv4, 16 for IPv6. */
export function ipBytes(ip: string): Buffer {
  const version = isIP(ip);
  if (version === 4) return Buffer.from(ip.split('.').map(Number));
  if (version !== 6) throw new Error(`not an IP address: ${ip}`);
  // An embedded IPv4 tail (::ffff:1.2.3.4) becomes two groups.
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(ip);
  const text = v4 === null ? ip : ip.slice(0, v4.index) + ipv4Groups(v4.slice(1).map(Number));
  const [head = '', tail] = text.split('::');
  const groups = (part: string): number[] => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const before = groups(head);
  const after = tail === undefined ? [] : groups(tail);
  const all = [...before, ...new Array<number>(8 - before.length - after.length).fill(0), ...after];
  const bytes = Buffer.alloc(16);
  all.forEach((group, i) => bytes.writeUInt16BE(group, i * 2));
  return bytes;
}

function ipv4Groups([a = 0, b = 0, c = 0, d = 0]: number[]): string {
  return `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
}

function pem(der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`;
}

/** The certificates of a PEM file, in order (a serving certificate, then its chain). */
export function pemCertificates(text: string): string[] {
  return [...text.matchAll(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g)].map((m) => `${m[0]}\n`);
}
