import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { watchServingFiles } from '../../../src/proxy/certificate-reload.ts';
import type { ServingMaterial } from '../../../src/proxy/certificate-reload.ts';
import { LOOPBACK_NAMES, generateServingCertificate } from '../../../src/server/tls/serving-certificate.ts';

/** Writes a file as a Secret volume or cert-manager replaces it: a new file renamed over the old. */
function replace(path: string, text: string): void {
  writeFileSync(`${path}.new`, text);
  renameSync(`${path}.new`, path);
}

test('watchServingFiles: a changed certificate and key are installed once; a pair that does not belong together is logged and the current one kept', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-reload-'));
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  const pair = { certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key') };
  const files = { pair, clientCaFile: join(dir, 'ca.crt') };
  const first = generateServingCertificate(LOOPBACK_NAMES);
  writeFileSync(files.pair.certFile, first.cert);
  writeFileSync(files.pair.keyFile, first.key);
  writeFileSync(files.clientCaFile, first.ca);
  const installed: ServingMaterial[] = [];
  const logged: string[] = [];
  const reload = watchServingFiles({
    files,
    install: (material) => installed.push(material),
    log: (level, _fields, message) => logged.push(`${level}: ${message}`),
    intervalMs: 1 << 30,
  });
  t.after(() => {
    reload.stop();
  });

  reload.check();
  assert.equal(installed.length, 0, 'nothing changed');

  const second = generateServingCertificate(LOOPBACK_NAMES);
  replace(files.pair.certFile, second.cert);
  replace(files.pair.keyFile, second.key);
  reload.check();
  assert.deepEqual(installed, [{ cert: second.cert, key: second.key, clientCa: first.ca }]);
  assert.deepEqual(logged, ['info: serving certificate and client CA reloaded']);
  reload.check();
  assert.equal(installed.length, 1, 'the same files are not installed twice');

  // Half a renewal: the new certificate before its key. Kept out, said once.
  const third = generateServingCertificate(LOOPBACK_NAMES);
  replace(files.pair.certFile, third.cert);
  reload.check();
  reload.check();
  assert.equal(installed.length, 1);
  assert.deepEqual(logged.slice(1), ['warn: serving certificate files changed but do not check out: still serving the current ones']);
  // The key follows: installed.
  replace(files.pair.keyFile, third.key);
  replace(files.clientCaFile, third.ca);
  reload.check();
  assert.deepEqual(installed.at(-1), { cert: third.cert, key: third.key, clientCa: third.ca });
  assert.equal(logged.at(-1), 'info: serving certificate and client CA reloaded');
});

test('watchServingFiles: with a generated pair (--tls-generate), the client CA file alone is followed, the generated pair kept', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-reload-'));
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  const generated = generateServingCertificate(LOOPBACK_NAMES);
  const clientCaFile = join(dir, 'ca.crt');
  writeFileSync(clientCaFile, generateServingCertificate(LOOPBACK_NAMES).ca);
  const installed: ServingMaterial[] = [];
  const reload = watchServingFiles({
    files: { clientCaFile },
    generated,
    install: (material) => installed.push(material),
    log: () => undefined,
    intervalMs: 1 << 30,
  });
  t.after(() => {
    reload.stop();
  });
  const rotated = generateServingCertificate(LOOPBACK_NAMES).ca;
  replace(clientCaFile, rotated);
  reload.check();
  assert.deepEqual(installed, [{ cert: generated.cert, key: generated.key, clientCa: rotated }]);
});
