import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TLS_CIPHER_SUITE_NAMES, tlsCiphers, tlsMinVersion } from '../../../../src/server/tls/tls-settings.ts';
import { createSecureContext } from 'node:tls';

test("tlsMinVersion: the apiserver's names (component-base TLSVersion) as Node's; anything else its error", () => {
  assert.equal(tlsMinVersion('VersionTLS10'), 'TLSv1');
  assert.equal(tlsMinVersion('VersionTLS11'), 'TLSv1.1');
  assert.equal(tlsMinVersion('VersionTLS12'), 'TLSv1.2');
  assert.equal(tlsMinVersion('VersionTLS13'), 'TLSv1.3');
  for (const bad of ['TLSv1.2', 'versiontls12', 'VersionTLS14', 'toString']) {
    const error = tlsMinVersion(bad);
    assert.ok(error instanceof Error && error.message === `unknown tls version "${bad}"`, bad);
  }
});

test("tlsCiphers: Go's names in the order given as OpenSSL's; TLS 1.3's change nothing; an unknown one is the apiserver's error", () => {
  assert.equal(
    tlsCiphers(['TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384', 'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256']),
    'ECDHE-RSA-AES256-GCM-SHA384:ECDHE-RSA-AES128-GCM-SHA256',
  );
  // The legacy CHACHA20 name and its _SHA256 name are one suite; TLS 1.3 names are dropped.
  assert.equal(
    tlsCiphers(['TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305', 'TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256', 'TLS_AES_128_GCM_SHA256']),
    'ECDHE-RSA-CHACHA20-POLY1305',
  );
  assert.equal(tlsCiphers(['TLS_AES_128_GCM_SHA256']), 'TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256');
  const unknown = tlsCiphers(['TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256', 'TLS_RSA_WITH_RC4_128_SHA']);
  assert.ok(unknown instanceof Error);
  assert.equal(unknown.message, "Cipher suite TLS_RSA_WITH_RC4_128_SHA not supported or doesn't exist");
  // Every name maps to a string OpenSSL takes.
  for (const name of TLS_CIPHER_SUITE_NAMES) {
    const ciphers = tlsCiphers([name]);
    assert.equal(typeof ciphers, 'string', name);
    assert.doesNotThrow(() => createSecureContext({ ciphers: ciphers as string }), name);
  }
});
