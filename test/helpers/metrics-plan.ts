// examples/metrics-lab.yaml (every probe, a finding each, a slow TLS handshake) with its lab
// targets and the lab's DNS server (the dns experiment's `resolvers: [lab:dns]`) at a lab on free
// ports, under another name and regions; a dual-stack target too, when a dual-stack server is given.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { LAB_DNS_SERVER, LAB_DNS_ZONE, labDnsServerAt, resolveLabUrl } from '../../contracts/lab-roles.js';
import type { Lab } from '../../lab/index.js';
import { REPO_ROOT } from './repo.js';

export async function everyProbePlan(
  lab: Lab,
  name: string,
  regions: string[] = ['local'],
  /** A port of 127.0.0.1 and [::1] (a dual-stack nginx): a target `ipFamily: both` on it too, by
   * a name the lab's DNS server answers with both addresses. */
  dualStackPort?: number,
): Promise<string> {
  const plan = parse(await readFile(path.join(REPO_ROOT, 'examples/metrics-lab.yaml'), 'utf8')) as {
    targets: Record<string, unknown>[];
    experiments: Record<string, unknown>[];
  };
  for (const target of plan.targets) target.url = resolveLabUrl(target.url as string, lab.address);
  for (const experiment of plan.experiments) {
    const resolvers = experiment.resolvers as string[] | undefined;
    if (resolvers)
      experiment.resolvers = resolvers.map((r) => (r === LAB_DNS_SERVER ? labDnsServerAt(lab.address) : r));
  }
  if (dualStackPort !== undefined) {
    plan.targets.push({
      name: 'dual',
      url: `http://dual.${LAB_DNS_ZONE}:${dualStackPort}/`,
      dns: { server: labDnsServerAt(lab.address) },
      ipFamily: 'both',
      labels: { team: 'edge' },
    });
    plan.experiments.push({ probe: 'reuse', requests: 5, modes: ['new'], targets: ['dual'] });
  }
  return stringify({ ...plan, name, regions });
}
