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
  leader-election                run one candidate of a leader election on a Lease, printing transitions
  version                        print the version and the Kubernetes version it is tested against (also --version)

Run 'kube-cache-proxy <command> --help' for a command's flags. \`npm start\` runs \`start\`.`;

/** The package's version, and the control plane its tests run (src/cli/dev-cluster/versions.ts). */
async function versionText(): Promise<string> {
  const { readFile } = await import('node:fs/promises');
  const { ETCD_VERSION, KUBERNETES_VERSION } = await import('./dev-cluster/versions.ts');
  // The same path from src/cli/ (a checkout) and from dist/cli/ (a packed install).
  const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return `kube-cache-proxy v${pkg.version}\ntested against Kubernetes ${KUBERNETES_VERSION} (kube-apiserver, kubectl; etcd ${ETCD_VERSION})`;
}

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case undefined:
      // A bare command shows what it can do (cobra's root command): it never starts anything.
      console.log(USAGE);
      return 0;
    case 'version':
    case '--version':
      console.log(await versionText());
      return 0;
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
