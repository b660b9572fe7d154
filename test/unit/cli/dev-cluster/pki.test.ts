import assert from 'node:assert/strict';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { createPki } from '../../../../src/cli/dev-cluster/pki.ts';

test('pki: the serving certificate is for 127.0.0.1 and localhost, signed by the generated CA', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-pki-'));
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  const pki = createPki(dir);
  const ca = new X509Certificate(readFileSync(pki.caCert));
  const serving = new X509Certificate(readFileSync(pki.servingCert));
  assert.equal(ca.ca, true);
  assert.equal(serving.ca, false);
  assert.ok(serving.verify(ca.publicKey), 'signed by the CA');
  assert.ok(serving.checkIP('127.0.0.1'));
  assert.equal(serving.checkHost('localhost'), 'localhost');
  assert.equal(serving.checkIP('10.10.10.10'), undefined);
  assert.equal(createPrivateKey(readFileSync(pki.serviceAccountKey)).asymmetricKeyType, 'rsa');
});
