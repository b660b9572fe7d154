/**
 * The `kube-cache-proxy` command. Subcommands load lazily, so that the proxy's runtime never
 * imports the dev-cluster code.
 */
import { CliError } from '../proxy/cli-error.ts';

const USAGE = `Usage: kube-cache-proxy <command>

Commands:
  start                          run the proxy; with no cluster configured, in front of a local control plane
  proxy                          run the proxy in front of the configured cluster (kubectl proxy's flags; --help)
  dev-cluster up|down|env|build  a real local control plane (etcd + kube-apiserver) on loopback
  leader-election                run one candidate of a leader election on a Lease, printing transitions`;

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case undefined:
    case 'start':
      return (await import('./start.ts')).startCommand(rest);
    case 'proxy':
      return (await import('./proxy-command.ts')).proxyCommand(rest);
    case 'dev-cluster':
      return (await import('./dev-cluster/command.ts')).devClusterCommand(rest);
    case 'leader-election':
      return (await import('./leader-election.ts')).leaderElectionCommand(rest);
    case '-h':
    case '--help':
    case 'help':
      console.log(USAGE);
      return 0;
    default:
      throw new CliError(`unknown command: ${command}`, USAGE);
  }
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (error) {
  if (error instanceof CliError) {
    console.error(`kube-cache-proxy: ${error.describe()}`);
    process.exitCode = 1;
  } else if (error instanceof TypeError && (error as NodeJS.ErrnoException).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    console.error(`kube-cache-proxy: ${error.message}\n${USAGE}`);
    process.exitCode = 2;
  } else {
    throw error;
  }
}
