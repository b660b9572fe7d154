/**
 * The apiserver's `--tls-min-version` and `--tls-cipher-suites` (k8s.io/component-base
 * cli/flag/ciphersuites_flag.go: TLSVersion, TLSCipherSuites), in Go's names, turned into what
 * Node's TLS (OpenSSL) takes: `minVersion` and a `ciphers` string.
 *
 * Go's TLS 1.3 suites are not configurable (crypto/tls ignores them in Config.CipherSuites), so
 * their names are accepted and change nothing, as in the apiserver: TLS 1.3 always offers
 * OpenSSL's three. A list of TLS 1.3 names only leaves TLS 1.2 without suites, as in Go.
 */

/** TLSVersion's names, and Node's. */
export const TLS_VERSIONS = {
  VersionTLS10: 'TLSv1',
  VersionTLS11: 'TLSv1.1',
  VersionTLS12: 'TLSv1.2',
  VersionTLS13: 'TLSv1.3',
} as const;

export type TlsVersionName = keyof typeof TLS_VERSIONS;
export type NodeTlsVersion = (typeof TLS_VERSIONS)[TlsVersionName];

/** DefaultTLSVersion: TLS 1.2. */
export const DEFAULT_TLS_MIN_VERSION: TlsVersionName = 'VersionTLS12';

/** The TLS 1.3 suites (tls.CipherSuites()'s first three), which OpenSSL names as IANA does. */
const TLS13_SUITES = ['TLS_AES_128_GCM_SHA256', 'TLS_AES_256_GCM_SHA384', 'TLS_CHACHA20_POLY1305_SHA256'] as const;

/**
 * Go's names of its TLS 1.0-1.2 suites (tls.CipherSuites() and tls.InsecureCipherSuites(), with
 * the legacy CHACHA20_POLY1305 names ciphersuites_flag.go keeps) and OpenSSL's. Go's RC4 and 3DES
 * suites are not here: Node's OpenSSL 3 serves neither, so they are refused with the apiserver's
 * error for an unknown suite.
 */
const TLS12_SUITES: Readonly<Record<string, string>> = {
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: 'ECDHE-ECDSA-AES128-GCM-SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: 'ECDHE-ECDSA-AES256-GCM-SHA384',
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: 'ECDHE-RSA-AES128-GCM-SHA256',
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: 'ECDHE-RSA-AES256-GCM-SHA384',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: 'ECDHE-ECDSA-AES128-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: 'ECDHE-ECDSA-AES256-SHA',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: 'ECDHE-RSA-AES128-SHA',
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: 'ECDHE-RSA-AES256-SHA',
  TLS_RSA_WITH_AES_128_GCM_SHA256: 'AES128-GCM-SHA256',
  TLS_RSA_WITH_AES_256_GCM_SHA384: 'AES256-GCM-SHA384',
  TLS_RSA_WITH_AES_128_CBC_SHA: 'AES128-SHA',
  TLS_RSA_WITH_AES_256_CBC_SHA: 'AES256-SHA',
  // Go's insecure ones.
  TLS_RSA_WITH_AES_128_CBC_SHA256: 'AES128-SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256: 'ECDHE-ECDSA-AES128-SHA256',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256: 'ECDHE-RSA-AES128-SHA256',
};

/** Every name the flag takes, for its help and errors. */
export const TLS_CIPHER_SUITE_NAMES: readonly string[] = [...TLS13_SUITES, ...Object.keys(TLS12_SUITES)];

/** TLSVersion: Node's version for a Go name, or an Error in the apiserver's words. */
export function tlsMinVersion(name: string): NodeTlsVersion | Error {
  if (Object.hasOwn(TLS_VERSIONS, name)) return TLS_VERSIONS[name as TlsVersionName];
  return new Error(`unknown tls version "${name}"`);
}

/**
 * TLSCipherSuites: Node's `ciphers` string for Go's names (in the order given, which is the
 * server's preference), or an Error in the apiserver's words for the first name it does not know.
 */
export function tlsCiphers(names: readonly string[]): string | Error {
  const tls12: string[] = [];
  for (const name of names) {
    const openssl = TLS12_SUITES[name];
    if (openssl !== undefined) {
      if (!tls12.includes(openssl)) tls12.push(openssl);
    } else if (!(TLS13_SUITES as readonly string[]).includes(name)) {
      return new Error(`Cipher suite ${name} not supported or doesn't exist`);
    }
  }
  // Node sets TLS 1.3's suites from the TLS_ names of the same string, and keeps its defaults
  // when there are none; with no TLS 1.2 suite named, only TLS 1.3's are left, as in Go.
  return tls12.length === 0 ? TLS13_SUITES.join(':') : tls12.join(':');
}
