// The options of every command that pushes metrics: --pushgateway and its timeout, and the
// `instance` of the pushed probe metrics.
import { BadArgumentError } from '../../common/bad-input.js';
import type { Argv } from 'yargs';
import { parsePushgatewayUrl, PushgatewayUrlError, type PushgatewaySettings } from '../../worker/metrics/pusher.js';

export const pushgatewayArgs = <T>(y: Argv<T>) =>
  y
    .option('pushgateway', {
      type: 'string',
      describe:
        'Prometheus Pushgateway URL, http[s]://[user:password@]host:port; metrics are pushed after every job and run (default: $PROBEFLEET_PUSHGATEWAY; none: no pushes)',
    })
    .option('pushgateway-timeout-seconds', {
      type: 'number',
      default: 5,
      describe:
        'bound on each request to the Pushgateway; a push is tried 3 times, 0.5 s and 1 s apart, then logged and counted as failed',
    });

export const instanceArg = <T>(y: Argv<T>) =>
  y.option('instance', {
    type: 'string',
    describe:
      'the "instance" label of the probe metrics this process pushes; one per process of a region (default: $PROBEFLEET_INSTANCE, else the host name)',
  });

export interface PushgatewayArgs {
  pushgateway?: string;
  pushgatewayTimeoutSeconds: number;
}

/** The Pushgateway to push to, from --pushgateway or PROBEFLEET_PUSHGATEWAY; undefined for none. */
export function pushgatewaySettingsOf(args: PushgatewayArgs): PushgatewaySettings | undefined {
  const url = args.pushgateway || process.env.PROBEFLEET_PUSHGATEWAY || undefined;
  if (!url) return undefined;
  try {
    parsePushgatewayUrl(url);
  } catch (err) {
    if (err instanceof PushgatewayUrlError) throw new BadArgumentError(`--pushgateway: ${err.message}`);
    throw err;
  }
  if (!(args.pushgatewayTimeoutSeconds > 0))
    throw new BadArgumentError(
      `--pushgateway-timeout-seconds must be positive (got ${args.pushgatewayTimeoutSeconds})`,
    );
  return { url, timeoutMs: args.pushgatewayTimeoutSeconds * 1000 };
}

/** The instance label from --instance or PROBEFLEET_INSTANCE; undefined: the host name. */
export function instanceOf(args: { instance?: string }): string | undefined {
  const instance = args.instance || process.env.PROBEFLEET_INSTANCE || undefined;
  if (instance !== undefined && !/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(instance)) {
    throw new BadArgumentError(`--instance: "${instance}" is not an instance name (A-Z, a-z, 0-9, ".", "_", "-")`);
  }
  return instance;
}
