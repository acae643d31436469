// Plans name lab servers by role (`url: lab:keepalive/nagle`); the lab's ports are known only to
// whoever started it or was told where it is. The entry points resolve those URLs here, before the
// plan is split, so every job carries a real URL: `run --lab` with the lab it started, `run
// --lab-at` and `schedule add --lab-at` with a lab running elsewhere (`probefleet lab`, the compose
// stack's), `regions run` with the lab on the emulated target host (10.77.0.1, reached the same
// way from every region). Workers never need to know where a lab is.
import { BadArgumentError } from '../common/bad-input.js';
import { isLabUrl, resolveLabUrl, type LabAddress } from '../contracts/lab-roles.js';
import type { LoadedPlan } from './loaded-plan.js';

/** Names of the plan's targets that name a lab server. */
export function labTargetsOf(loaded: LoadedPlan): string[] {
  return loaded.plan.targets.filter((t) => isLabUrl(t.url)).map((t) => t.name);
}

/**
 * The plan with every `lab:` URL made real at `lab`. Without a lab, a plan that names one is bad
 * input: `hint` says how this command is given one.
 */
export function withLabTargets(loaded: LoadedPlan, lab: LabAddress | undefined, hint: string): LoadedPlan {
  const named = labTargetsOf(loaded);
  if (named.length === 0) return loaded;
  if (!lab) {
    throw new BadArgumentError(
      `${loaded.file}: target${named.length === 1 ? '' : 's'} ${named.join(', ')} name${named.length === 1 ? 's' : ''} a lab server (lab:...); ${hint}`,
    );
  }
  return {
    ...loaded,
    plan: {
      ...loaded.plan,
      targets: loaded.plan.targets.map((t) => (isLabUrl(t.url) ? { ...t, url: resolveLabUrl(t.url, lab) } : t)),
    },
  };
}
