// The options of every command that pushes metrics: --pushgateway and its timeout, and the
// `instance` of the pushed probe metrics.
import { BadArgumentError } from '../../common/bad-input.js';
import type { Argv } from 'yargs';
import { parsePushgatewayUrl, PushgatewayUrlError, type PushgatewaySettings } from '../../metrics/pusher.js';

export const pushgatewayArgs = <T>(y: Argv<T>) =>
  y
    .option('pushgateway', {
      type: 'string',
      describe:
        'Prometheus Pushgateway URL, http[s]://[user:password@]host:port; metrics are pushed after jobs (see --pushgateway-interval-seconds) and after every run (default: $PROBEFLEET_PUSHGATEWAY; none: no pushes)',
    })
    .option('pushgateway-timeout-seconds', {
      type: 'number',
      default: 5,
      describe: 'bound on each request to the Pushgateway',
    })
    .option('pushgateway-interval-seconds', {
      type: 'number',
      default: 5,
      describe:
        "the probes' cumulative metrics are pushed at most this often while jobs finish (each push sends every series), and at once when the process stops",
    })
    .option('pushgateway-retry-seconds', {
      type: 'number',
      default: 30,
      describe:
        'a push that fails is retried for this long (0.5 s apart, doubling to 8 s), then logged, counted (probefleet_push_failures_total) and pushed again once the gateway answers',
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
  pushgatewayIntervalSeconds: number;
  pushgatewayRetrySeconds: number;
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
  if (!(args.pushgatewayRetrySeconds >= 0))
    throw new BadArgumentError(`--pushgateway-retry-seconds must be 0 or more (got ${args.pushgatewayRetrySeconds})`);
  if (!(args.pushgatewayIntervalSeconds >= 0))
    throw new BadArgumentError(
      `--pushgateway-interval-seconds must be 0 or more (got ${args.pushgatewayIntervalSeconds})`,
    );
  return {
    url,
    timeoutMs: args.pushgatewayTimeoutSeconds * 1000,
    retryForMs: args.pushgatewayRetrySeconds * 1000,
    pushIntervalMs: args.pushgatewayIntervalSeconds * 1000,
  };
}

/** The instance label from --instance or PROBEFLEET_INSTANCE; undefined: the host name. */
export function instanceOf(args: { instance?: string }): string | undefined {
  const instance = args.instance || process.env.PROBEFLEET_INSTANCE || undefined;
  if (instance !== undefined && !/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(instance)) {
    throw new BadArgumentError(`--instance: "${instance}" is not an instance name (A-Z, a-z, 0-9, ".", "_", "-")`);
  }
  return instance;
}
