import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { test } from 'node:test';
import { CliError } from '../../../src/proxy/cli-error.ts';
import { parseLeaderElectionArgs } from '../../../src/cli/leader-election.ts';

test("leader-election CLI: client-go's defaults (15/10/2 s) and identity hostname_pid", () => {
  assert.deepEqual(parseLeaderElectionArgs(['--lease', 'l', '--namespace', 'ns']), {
    lease: 'l',
    namespace: 'ns',
    identity: `${hostname()}_${String(process.pid)}`,
    kubeconfig: undefined,
    context: undefined,
    leaseDurationMs: 15_000,
    renewDeadlineMs: 10_000,
    retryPeriodMs: 2_000,
    releaseOnCancel: false,
    ownerPid: undefined,
  });
});

test('leader-election CLI: Go durations, fractions allowed; every flag read', () => {
  const args = parseLeaderElectionArgs([
    '--lease=l',
    '--namespace=ns',
    '--identity=me',
    '--kubeconfig=/k',
    '--context=c',
    '--lease-duration=4s',
    '--renew-deadline=2000ms',
    '--retry-period=0.5s',
    '--release-on-cancel=true',
    '--owner-pid=42',
  ]);
  assert.deepEqual(args, {
    lease: 'l',
    namespace: 'ns',
    identity: 'me',
    kubeconfig: '/k',
    context: 'c',
    leaseDurationMs: 4_000,
    renewDeadlineMs: 2_000,
    retryPeriodMs: 500,
    releaseOnCancel: true,
    ownerPid: 42,
  });
});

test('leader-election CLI: missing or bad flags are errors for a person; --help is not an error', () => {
  assert.equal(parseLeaderElectionArgs(['--help']), undefined);
  const rejects = (argv: string[], message: RegExp): void => {
    assert.throws(
      () => parseLeaderElectionArgs(argv),
      (error) => error instanceof CliError && message.test(error.message),
    );
  };
  rejects(['--namespace', 'ns'], /--lease is required/);
  rejects(['--lease', 'l'], /--namespace is required/);
  rejects(
    ['--lease', 'l', '--namespace', 'ns', '--retry-period', 'soon'],
    /--retry-period must be a duration > 0 with a unit \(e.g. 15s, 500ms\), not soon/,
  );
  rejects(['--lease', 'l', '--namespace', 'ns', '--retry-period', '2'], /--retry-period must be a duration > 0/);
  rejects(['--lease', 'l', '--namespace', 'ns', '--lease-duration', '0'], /--lease-duration must be a duration > 0/);
  rejects(['--lease', 'l', '--namespace', 'ns', '--lease-duration', '4500ms'], /--lease-duration must be whole seconds/);
  rejects(['--lease', 'l', '--namespace', 'ns', '--release-on-cancel=maybe'], /invalid argument "maybe" for "--release-on-cancel" flag/);
  rejects(['--lease', 'l', '--namespace', 'ns', '--owner-pid=0'], /--owner-pid must be a process id/);
  rejects(
    ['--lease', 'l', '--namespace', 'ns', '--lease-duration=2s', '--renew-deadline=2s'],
    /leaseDuration \(2000 ms\) must be greater than renewDeadline/,
  );
  rejects(['--lease', 'l', '--namespace', 'ns', 'extra'], /unexpected arguments: extra/);
});
