// The options of every command that runs probes: which addresses they may connect to
// (worker/target-policy.ts). A worker allows no loopback unless told; `probefleet run` without
// Redis, a person probing from their own machine, allows it unless told not to.
import { BadArgumentError } from '../../common/bad-input.js';
import type { Argv } from 'yargs';
import { TargetPolicy, TargetPolicyError, type TargetPolicySettings } from '../../worker/target-policy.js';

export const targetPolicyArgs = <T>(y: Argv<T>, loopbackByDefault: boolean) =>
  y
    .option('allow-loopback', {
      type: 'boolean',
      describe: `allow targets on loopback (127.0.0.0/8, ::1), such as the lab (default: $PROBEFLEET_ALLOW_LOOPBACK, else ${loopbackByDefault ? 'allowed; --no-allow-loopback refuses them' : 'refused'})`,
    })
    .option('allow-targets', {
      type: 'string',
      array: true,
      // One value per flag, so that `--allow-targets 10.0.0.0/8 plan.yaml` leaves the plan alone.
      nargs: 1,
      describe:
        'allow private, link-local and other internal addresses in these CIDRs (10.77.0.0/16) or of hosts matching these patterns (*.internal.example); ' +
        'repeat or separate with commas (default: $PROBEFLEET_ALLOW_TARGETS, else none)',
    });

export interface TargetPolicyArgs {
  allowLoopback?: boolean;
  allowTargets?: string[];
}

/** The policy from the flags, else the environment, else the command's default. */
export function targetPolicyOf(args: TargetPolicyArgs, loopbackByDefault: boolean): TargetPolicy {
  const env = process.env.PROBEFLEET_ALLOW_LOOPBACK;
  if (env !== undefined && env !== '' && !/^(1|0|true|false)$/.test(env)) {
    throw new BadArgumentError(`PROBEFLEET_ALLOW_LOOPBACK must be 1, 0, true or false (got "${env}")`);
  }
  const settings: TargetPolicySettings = {
    allowLoopback: args.allowLoopback ?? (env ? env === '1' || env === 'true' : loopbackByDefault),
    allowTargets: (args.allowTargets ?? [process.env.PROBEFLEET_ALLOW_TARGETS ?? ''])
      .flatMap((entry) => entry.split(/[\s,]+/))
      .filter(Boolean),
  };
  try {
    return new TargetPolicy(settings);
  } catch (err) {
    if (err instanceof TargetPolicyError) throw new BadArgumentError(`--allow-targets: ${err.message}`);
    throw err;
  }
}
