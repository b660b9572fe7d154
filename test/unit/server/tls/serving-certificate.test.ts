import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { bitString, namedBits, oid, smallInteger, time, tlv, unsignedInteger } from '../../../../src/server/tls/der.ts';
import { LOOPBACK_NAMES, generateServingCertificate, ipBytes, pemCertificates } from '../../../../src/server/tls/serving-certificate.ts';

const hex = (b: Buffer): string => b.toString('hex');

test('DER: lengths, integers, OIDs, bit strings and times as X.690 encodes them', () => {
  assert.equal(hex(tlv(0x04, Buffer.alloc(3))), '0403000000');
  assert.equal(hex(tlv(0x04, Buffer.alloc(200))).slice(0, 6), '0481c8');
  assert.equal(hex(tlv(0x04, Buffer.alloc(300))).slice(0, 8), '0482012c');
  assert.equal(hex(smallInteger(2)), '020102');
  assert.equal(hex(smallInteger(0)), '020100');
  assert.equal(hex(unsignedInteger(Buffer.from([0x00, 0x00, 0x80]))), '02020080', 'leading zeros dropped, a sign octet kept');
  assert.equal(hex(oid('1.2.840.10045.4.3.2')), '06082a8648ce3d040302');
  assert.equal(hex(oid('2.5.29.17')), '0603551d11');
  assert.equal(hex(bitString(Buffer.from([0xab]))), '030200ab');
  // keyCertSign | cRLSign (bits 5, 6): one unused bit; digitalSignature (bit 0): seven.
  assert.equal(hex(namedBits([5, 6])), '03020106');
  assert.equal(hex(namedBits([0])), '03020780');
  assert.equal(time(new Date('2026-01-02T03:04:05Z')).toString('latin1', 2), '260102030405Z');
  assert.equal(time(new Date('2026-01-02T03:04:05Z'))[0], 0x17);
  assert.equal(time(new Date('2051-01-02T03:04:05Z')).toString('latin1', 2), '20510102030405Z');
  assert.equal(time(new Date('2051-01-02T03:04:05Z'))[0], 0x18);
});

test('IP addresses as iPAddress octets', () => {
  assert.equal(hex(ipBytes('127.0.0.1')), '7f000001');
  assert.equal(hex(ipBytes('::1')), '00000000000000000000000000000001');
  assert.equal(hex(ipBytes('fe80::1:2')), 'fe800000000000000000000000010002');
  assert.equal(hex(ipBytes('::ffff:10.1.2.3')), '00000000000000000000ffff0a010203');
  assert.throws(() => ipBytes('localhost'), /not an IP address/);
});

test('serving certificate: a CA, and a certificate it signed for the loopback names, valid now', () => {
  const now = new Date('2026-03-01T00:00:00Z');
  const made = generateServingCertificate({ ...LOOPBACK_NAMES, ips: [...LOOPBACK_NAMES.ips, '10.0.0.7'], now });
  const ca = new X509Certificate(made.ca);
  const cert = new X509Certificate(made.cert);
  assert.equal(ca.ca, true);
  assert.equal(cert.ca, false);
  assert.ok(cert.checkIssued(ca));
  assert.ok(cert.verify(ca.publicKey));
  assert.ok(ca.verify(ca.publicKey), 'the CA is self-signed');
  assert.equal(cert.subjectAltName, 'DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, IP Address:10.0.0.7');
  for (const ip of ['127.0.0.1', '::1', '10.0.0.7']) assert.equal(cert.checkIP(ip), ip);
  assert.equal(cert.checkHost('localhost'), 'localhost');
  assert.equal(cert.checkIP('10.0.0.8'), undefined);
  assert.deepEqual(cert.keyUsage, ['1.3.6.1.5.5.7.3.1']);
  assert.ok(new Date(cert.validFrom) < now && new Date(cert.validTo) > new Date('2035-01-01'));
  assert.ok(cert.checkPrivateKey(createPrivateKey(made.key)));
  assert.notEqual(cert.serialNumber, new X509Certificate(generateServingCertificate(LOOPBACK_NAMES).cert).serialNumber);
});

test('serving certificate: OpenSSL verifies it in strict mode, for a TLS server', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-cert-'));
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  const made = generateServingCertificate(LOOPBACK_NAMES);
  writeFileSync(join(dir, 'ca.crt'), made.ca);
  writeFileSync(join(dir, 'tls.crt'), made.cert);
  const out = execFileSync('openssl', [
    'verify',
    '-x509_strict',
    '-purpose',
    'sslserver',
    '-verify_ip',
    '127.0.0.1',
    '-CAfile',
    join(dir, 'ca.crt'),
    join(dir, 'tls.crt'),
  ]).toString();
  assert.match(out, /tls\.crt: OK/);
});

test('pemCertificates: the certificates of a chain file, in order', () => {
  const a = generateServingCertificate(LOOPBACK_NAMES);
  const chain = pemCertificates(`${a.cert}\n# a comment\n${a.ca}`);
  assert.deepEqual(chain, [a.cert, a.ca]);
  assert.deepEqual(pemCertificates('no certificate'), []);
});
