// Where the lab is, for plans that name its servers by role (`url: lab:keepalive/nagle`):
// `--lab` starts one for the command's duration (ports from 18170, or free ones when those are
// taken), `--lab-at HOST:PORT` points at one already running (`probefleet lab --port PORT`).
import type { Argv } from 'yargs';
import { BadArgumentError } from '../../common/bad-input.js';
import type { Logger } from '../../common/log.js';
import { DEFAULT_LAB_PORT, labAddressAt, type LabAddress } from '../../contracts/lab-roles.js';
import type { Lab } from '../../lab/index.js';

export const labAtArg = <T>(y: Argv<T>) =>
  y.option('lab-at', {
    type: 'string',
    describe:
      'HOST:PORT of a lab already running (`probefleet lab --port PORT` on HOST), for targets that name lab servers (lab:keepalive/)',
  });

export const labArgs = <T>(y: Argv<T>) =>
  labAtArg(y)
    .option('lab', { type: 'boolean', default: false, describe: 'start the lab target for the duration of the run' })
    .option('lab-port', {
      type: 'number',
      describe: `first port of the lab target with --lab (default ${DEFAULT_LAB_PORT}, or free ports when those are taken)`,
    });

/** A lab at `HOST:PORT`, its servers on PORT + their offsets. */
export function labAtOf(text: string): LabAddress {
  let url: URL | undefined;
  try {
    url = new URL(`http://${text}`);
  } catch {}
  if (!url?.hostname || !url.port || url.pathname !== '/' || url.search || url.username || /[/?#@]/.test(text))
    throw new BadArgumentError(`--lab-at: "${text}" is not HOST:PORT (e.g. 127.0.0.1:18170)`);
  return labAddressAt(url.hostname.replace(/^\[(.*)\]$/, '$1'), Number(url.port));
}

/**
 * Starts the lab for a run: on `port` when given (taken is an error), else from the default port,
 * falling back to free ports when one of those is taken (plans name the servers by role, so any
 * port does). Says on stderr when it fell back.
 */
export async function startRunLab(port: number | undefined, log: Logger): Promise<Lab> {
  // Loaded here: the lab's servers and certificates are for the commands that start one.
  const { LabPortInUseError, startLab } = await import('../../lab/index.js');
  if (port !== undefined) return startLab({ basePort: port, log });
  try {
    return await startLab({ basePort: DEFAULT_LAB_PORT, log });
  } catch (err) {
    if (!(err instanceof LabPortInUseError)) throw err;
    const lab = await startLab({ basePort: 0, log });
    process.stderr.write(
      `lab: port ${err.port} is taken; the lab listens on free ports instead (keepalive on ${lab.servers.keepalive.port}; \`lab:\` targets follow it)\n`,
    );
    return lab;
  }
}
