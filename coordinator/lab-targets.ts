// Plans name lab servers by role (`url: lab:keepalive/nagle`, a dns experiment's `resolvers:
// [lab:dns]`, a target's `dns.server: lab:dns`); the lab's ports are known only to whoever started
// it or was told where it is. The entry points resolve those references here, before the plan is
// split, so every job carries a real URL and real parameters: `run --lab` with the lab it started,
// `run --lab-at` and `schedule add --lab-at` with a lab running elsewhere (`probefleet lab`, the
// compose stack's), `regions run` with the lab on the emulated target host (10.77.0.1, reached the
// same way from every region). Workers never need to know where a lab is.
import { BadArgumentError } from '../common/bad-input.js';
import { isLabUrl, LAB_DNS_SERVER, labDnsServerAt, resolveLabUrl, type LabAddress } from '../contracts/lab-roles.js';
import type { Experiment, RunTarget } from '../contracts/plan.js';
import { PROBES } from '../contracts/probes/index.js';
import type { LoadedPlan } from './loaded-plan.js';

/** Whether a target names a lab server: as its URL, or as the DNS server its name is looked up at. */
const namesLab = (t: RunTarget) => isLabUrl(t.url) || t.dns?.server === LAB_DNS_SERVER;

/** Names of the plan's targets that name a lab server. */
export function labTargetsOf(loaded: LoadedPlan): string[] {
  return loaded.plan.targets.filter(namesLab).map((t) => t.name);
}

/** The target with its lab references made real at `lab`. */
function labTargetAt(target: RunTarget, lab: LabAddress): RunTarget {
  if (!namesLab(target)) return target;
  return {
    ...target,
    url: isLabUrl(target.url) ? resolveLabUrl(target.url, lab) : target.url,
    ...(target.dns?.server === LAB_DNS_SERVER ? { dns: { ...target.dns, server: labDnsServerAt(lab) } } : {}),
  };
}

/** The probe's parameters that may name a lab server, as the contract declares them. */
const labParamsOf = (experiment: Experiment) =>
  (
    PROBES[experiment.probe] as {
      labParams?: {
        of(params: Experiment): string[];
        resolved(params: Experiment, at: (reference: string) => string): Experiment;
      };
    }
  ).labParams;

/** The plan's experiments whose parameters name a lab server: "experiments[1] (lab:dns)". */
export function labParamsExperimentsOf(loaded: LoadedPlan): string[] {
  return loaded.plan.experiments.flatMap((e, i) => {
    const named = labParamsOf(e)?.of(e) ?? [];
    return named.length > 0 ? [`experiments[${i}] (${[...new Set(named)].join(', ')})`] : [];
  });
}

/** The lab server a reference in an experiment's parameters names, at `lab`. */
function labParamAt(reference: string, lab: LabAddress): string {
  if (reference === LAB_DNS_SERVER) return labDnsServerAt(lab);
  throw new Error(`no lab server to resolve "${reference}" to`);
}

/**
 * The plan with every `lab:` URL and lab reference in parameters made real at `lab`. Without a
 * lab, a plan that names one is bad input: `hint` says how this command is given one.
 */
export function withLabTargets(given: LoadedPlan, lab: LabAddress | undefined, hint: string): LoadedPlan {
  // A plan's target files are read again when its schedule fires: lab URLs in them resolve where this lab is.
  const loaded = lab && given.targetFiles ? { ...given, lab } : given;
  const named = labTargetsOf(loaded);
  const experiments = labParamsExperimentsOf(loaded);
  if (named.length === 0 && experiments.length === 0) return loaded;
  if (!lab) {
    const what = [
      ...(named.length > 0
        ? [
            `target${named.length === 1 ? '' : 's'} ${named.join(', ')} name${named.length === 1 ? 's' : ''} a lab server (lab:...)`,
          ]
        : []),
      ...(experiments.length > 0
        ? [
            `${experiments.join(', ')} name${experiments.length === 1 ? 's a lab server in its' : ' lab servers in their'} parameters`,
          ]
        : []),
    ];
    throw new BadArgumentError(`${loaded.file}: ${what.join('; ')}; ${hint}`);
  }
  return {
    ...loaded,
    plan: {
      ...loaded.plan,
      targets: loaded.plan.targets.map((t) => labTargetAt(t, lab)),
      experiments: loaded.plan.experiments.map(
        (e) => labParamsOf(e)?.resolved(e, (reference) => labParamAt(reference, lab)) ?? e,
      ),
    },
  };
}
