// `probefleet lab`: the reference servers on loopback until Ctrl-C.
import type { Argv, CommandModule } from 'yargs';
import type { ArgsOf } from '../options/args.js';
import { createLogger } from '../../common/log.js';
import { DEFAULT_LAB_PORT } from '../../contracts/lab-roles.js';
import { startLab } from '../../lab/index.js';
import { LAB_PATHS } from '../../lab/routes.js';
import { renderTable } from '../../coordinator/report/table.js';

const options = (y: Argv) =>
  y
    .option('port', {
      type: 'number',
      default: DEFAULT_LAB_PORT,
      describe: 'first port; each server listens on port + its offset (0: any free ports)',
    })
    .option('host', { type: 'string', default: '127.0.0.1', describe: 'address to listen on' });

export const labCommand: CommandModule<object, ArgsOf<typeof options>> = {
  command: 'lab',
  describe: 'Start the lab target: reference servers for every probe, on loopback',
  builder: options,
  handler: async ({ port, host }) => {
    const lab = await startLab({ host, basePort: port, log: createLogger('lab') });
    process.stdout.write(
      `${renderTable(
        ['server', 'url', 'what it is'],
        Object.values(lab.servers).map((s) => [s.name, s.url, s.description]),
        'lll',
      )}\npaths on every server but the hostile ones (docs/lab.md): ${LAB_PATHS.join(' ')}\nlab CA certificate: ${lab.caFile}\nclient certificate for mtls: ${lab.clientCertFile}, its key: ${lab.clientKeyFile}\nCtrl-C to stop.\n`,
    );
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await lab.close();
  },
};
